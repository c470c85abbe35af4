package fetch

import (
	"fmt"
	"net/url"
	"strings"
)

// hostedSHA returns the sha256 a scheduler-hosted package URL names
// (…/packages/{sha256}/{token}/{name}, see the packages package), or "".
// Such a package is cached by its content, not its URL: the leader rewrites
// the URL's host to its own, so a leader change must not download it again,
// and what is downloaded must hash to that sha256.
func hostedSHA(u *url.URL) string {
	if u.Scheme != "http" && u.Scheme != "https" {
		return ""
	}
	parts := strings.Split(u.Path, "/")
	n := len(parts)
	if n < 5 || parts[n-4] != "packages" || !isHex(parts[n-3], 64) || !isHex(parts[n-2], 32) || parts[n-1] == "" {
		return ""
	}
	return parts[n-3]
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// cacheKey is what a cache entry is named after: a hosted package's content
// and file name, or the URL.
func cacheKey(u *url.URL) string {
	if sha := hostedSHA(u); sha != "" {
		return "package:" + sha + "/" + u.Path[strings.LastIndexByte(u.Path, '/')+1:]
	}
	return u.String()
}

// checkHosted fails a hosted package whose bytes do not hash to its URL's sha256.
func checkHosted(u *url.URL, got string) error {
	if want := hostedSHA(u); want != "" && got != want {
		return permanentError{fmt.Errorf("the package's sha256 is %s, its URL names %s", got, want)}
	}
	return nil
}
