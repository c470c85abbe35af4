package ejctl

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// calendarView is a calendar as the API shows it.
type calendarView struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	TimeZone    string   `json:"timeZone,omitempty"`
	Weekdays    []string `json:"weekdays,omitempty"`
	Exclude     []struct {
		Summary  string   `json:"summary,omitempty"`
		From     string   `json:"from"`
		To       string   `json:"to,omitempty"`
		Repeat   string   `json:"repeat,omitempty"`
		Interval int      `json:"interval,omitempty"`
		Until    string   `json:"until,omitempty"`
		Except   []string `json:"except,omitempty"`
	} `json:"exclude,omitempty"`
}

func (c tenancyGroup) calendarCmd() *cobra.Command {
	cmd := group("calendar", "The namespace's business calendars: set (from JSON or an .ics file), ls, get, rm; jobs name them in their calendar field")
	cmd.Aliases = []string{"calendars", "cal"}
	cmd.AddCommand(c.calendarSetCmd(), c.calendarLsCmd(), c.calendarGetCmd(), c.calendarRmCmd())
	return cmd
}

// calendarSetCmd: ejctl calendar set NAME -f FILE (JSON, or .ics with its flags).
func (c tenancyGroup) calendarSetCmd() *cobra.Command {
	var file, zone, weekdays, desc string
	set := &cobra.Command{
		Use:   "set NAME -f FILE",
		Short: "Store a calendar from a JSON file, or from an iCalendar .ics file (its events excluded; --time-zone, --weekdays MON,TUE,… and --description for the rest)",
		Args:  exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return errors.New("-f FILE is required (a .json calendar or an .ics file)")
			}
			b, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			r := request{method: http.MethodPut, path: c.calendarsPath() + "/" + seg(args[0]), body: bytes.NewReader(b), length: int64(len(b)), contentType: "application/json"}
			if strings.HasSuffix(strings.ToLower(file), ".ics") || bytes.HasPrefix(bytes.TrimSpace(b), []byte("BEGIN:VCALENDAR")) {
				r.contentType = "text/calendar"
				r.query = url.Values{}
				for k, v := range map[string]string{"timeZone": zone, "weekdays": weekdays, "description": desc} {
					if v != "" {
						r.query.Set(k, v)
					}
				}
			} else if zone != "" || weekdays != "" || desc != "" {
				return errors.New("--time-zone, --weekdays and --description go with an .ics file; a JSON calendar holds them")
			}
			var out calendarView
			if err := c.client.call(cmd.Context(), r, &out); err != nil {
				return err
			}
			if c.json() {
				return c.printJSON(out)
			}
			c.say("calendar %s stored: %d excluded periods, weekdays %s", out.Name, len(out.Exclude), weekdaysText(out.Weekdays))
			return nil
		},
	}
	set.Flags().StringVarP(&file, "file", "f", "", "a JSON calendar or an .ics file")
	set.Flags().StringVar(&zone, "time-zone", "", "with an .ics file: the calendar's IANA zone")
	set.Flags().StringVar(&weekdays, "weekdays", "", "with an .ics file: the days fires happen on (MON,TUE,WED,THU,FRI)")
	set.Flags().StringVar(&desc, "description", "", "with an .ics file: a description")
	return set
}

// calendarLsCmd: ejctl calendar ls.
func (c tenancyGroup) calendarLsCmd() *cobra.Command {
	ls := &cobra.Command{
		Use: "ls", Aliases: []string{"list"}, Short: "The namespace's calendars", Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var all []calendarView
			if err := c.client.get(cmd.Context(), c.calendarsPath(), nil, &all); err != nil {
				return err
			}
			if c.json() {
				return c.printJSON(all)
			}
			rows := make([][]string, 0, len(all))
			for _, v := range all {
				rows = append(rows, []string{v.Name, orDash(v.TimeZone), weekdaysText(v.Weekdays), strconv.Itoa(len(v.Exclude)), orDash(v.Description)})
			}
			return c.table([]string{"NAME", "ZONE", "WEEKDAYS", "EXCLUDED", "DESCRIPTION"}, rows)
		},
	}
	return ls
}

// calendarGetCmd: ejctl calendar get NAME.
func (c tenancyGroup) calendarGetCmd() *cobra.Command {
	get := &cobra.Command{
		Use: "get NAME", Short: "One calendar: its weekdays and excluded periods", Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var v calendarView
			if err := c.client.get(cmd.Context(), c.calendarsPath()+"/"+seg(args[0]), nil, &v); err != nil {
				return err
			}
			if c.json() {
				return c.printJSON(v)
			}
			c.say("calendar %s, zone %s, weekdays %s", v.Name, orDash(v.TimeZone), weekdaysText(v.Weekdays))
			rows := make([][]string, 0, len(v.Exclude))
			for _, p := range v.Exclude {
				repeat := strings.ToLower(p.Repeat)
				if p.Interval > 1 {
					repeat += " every " + strconv.Itoa(p.Interval)
				}
				rows = append(rows, []string{p.From, orDash(p.To), orDash(repeat), orDash(p.Until), orDash(strings.Join(p.Except, ",")), orDash(p.Summary)})
			}
			return c.table([]string{"FROM", "TO", "REPEAT", "UNTIL", "EXCEPT", "SUMMARY"}, rows)
		},
	}
	return get
}

// calendarRmCmd: ejctl calendar rm NAME.
func (c tenancyGroup) calendarRmCmd() *cobra.Command {
	rm := &cobra.Command{
		Use: "rm NAME", Short: "Delete a calendar; refused while a job names it", Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := c.client.del(cmd.Context(), c.calendarsPath()+"/"+seg(args[0])); err != nil {
				return err
			}
			c.say("calendar %s deleted", args[0])
			return nil
		},
	}
	return rm
}

func (c tenancyGroup) calendarsPath() string {
	return "/api/namespaces/" + seg(c.settings.Namespace) + "/calendars"
}

func weekdaysText(days []string) string {
	if len(days) == 0 {
		return "every day"
	}
	return strings.Join(days, ",")
}

// jobNext is GET /api/jobs/{jobName}/next's answer.
type jobNext struct {
	JobName       string   `json:"jobName"`
	Crons         []string `json:"crons"`
	TimeZone      string   `json:"timeZone"`
	Calendar      string   `json:"calendar,omitempty"`
	JitterSeconds int64    `json:"jitterSeconds"`
	Fires         []string `json:"fires"`
}

func (c tenancyGroup) nextCmd() *cobra.Command {
	var count int
	cmd := &cobra.Command{
		Use:   "next NAME [--count N]",
		Short: "The job's next fires as the leader makes them (its crons, H, jitter and calendar)",
		Args:  exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var n jobNext
			if err := c.client.get(cmd.Context(), "/api/jobs/"+seg(args[0])+"/next", url.Values{"count": {strconv.Itoa(count)}}, &n); err != nil {
				return err
			}
			if c.json() {
				return c.printJSON(n)
			}
			c.say("job %s: crons %s, zone %s, jitter +%ds, calendar %s", n.JobName, strings.Join(n.Crons, " | "), n.TimeZone, n.JitterSeconds, orDash(n.Calendar))
			rows := make([][]string, 0, len(n.Fires))
			for i, f := range n.Fires {
				rows = append(rows, []string{fmt.Sprint(i + 1), f})
			}
			return c.table([]string{"#", "FIRE"}, rows)
		},
	}
	cmd.Flags().IntVar(&count, "count", 5, "how many fires (1-100)")
	return cmd
}
