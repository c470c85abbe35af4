package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
)

// A DingTalk robot may be "signed" (it refuses a post whose URL has no valid signature) and
// may require a keyword (it refuses a message whose text lacks it): the 3.x DingTalk
// handler's dingtalk.secret and dingtalk.keyword. A job's props keep those names (an
// upgraded job's props are the original's), so a signed robot keeps receiving the alerts.

// Robot is what a DingTalk robot asks of a post besides its URL.
type Robot struct {
	Secret  string // the robot's signing secret ("": unsigned)
	Keyword string // a word its messages must contain ("": none)
}

// RobotOf is a job's DingTalk robot settings (props dingtalk.secret and dingtalk.keyword);
// zero for another format.
func RobotOf(c jobs.Config) Robot {
	if c.Props["webhook.format"] != "dingtalk" {
		return Robot{}
	}
	return Robot{Secret: c.Props["dingtalk.secret"], Keyword: c.Props["dingtalk.keyword"]}
}

// withKeyword puts the robot's keyword ahead of text when text lacks it.
func (r Robot) withKeyword(text string) string {
	if r.Keyword == "" || strings.Contains(text, r.Keyword) {
		return text
	}
	return r.Keyword + " " + text
}

// Sign appends DingTalk's signature to a signed robot's URL, as DingTalk checks it: the
// timestamp in milliseconds, and the base64 of the HMAC-SHA256, keyed with the secret, of
// "timestamp\nsecret", URL-escaped.
func Sign(rawURL, secret string, at time.Time) string {
	if secret == "" {
		return rawURL
	}
	ts := strconv.FormatInt(at.UnixMilli(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "\n" + secret))
	sign := url.QueryEscape(base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	sep := "?"
	if strings.Contains(rawURL, "?") {
		sep = "&"
	}
	return rawURL + sep + "timestamp=" + ts + "&sign=" + sign
}
