package cron_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/jobs/cron"
)

// The last Friday of each month at 18:00, in the job's zone.
func ExampleSchedule_NextN() {
	s, err := cron.Parse("0 0 18 ? * 6L")
	if err != nil {
		fmt.Println(err)
		return
	}
	loc, _ := time.LoadLocation("Europe/Berlin")
	for _, t := range s.NextN(time.Date(2026, 1, 1, 0, 0, 0, 0, loc), loc, 3) {
		fmt.Println(t.Format(time.DateTime + " MST"))
	}
	// Output:
	// 2026-01-30 18:00:00 CET
	// 2026-02-27 18:00:00 CET
	// 2026-03-27 18:00:00 CET
}

// A wall-clock time the spring-forward gap skips fires once, at the
// transition instant.
func ExampleSchedule_Next() {
	s, _ := cron.Parse("0 30 2 * * ?")
	ny, _ := time.LoadLocation("America/New_York")
	t := s.Next(time.Date(2026, 3, 7, 12, 0, 0, 0, ny), ny)
	fmt.Println(t.Format(time.DateTime + " MST"))
	fmt.Println(s.Next(t, ny).Format(time.DateTime + " MST"))
	// Output:
	// 2026-03-08 03:00:00 EDT
	// 2026-03-09 02:30:00 EDT
}

// A bad expression is a *ParseError naming its field.
func ExampleParse() {
	_, err := cron.Parse("0 61 * * * ?")
	var pe *cron.ParseError
	fmt.Println(errors.As(err, &pe))
	fmt.Println(err)
	// Output:
	// true
	// cron "0 61 * * * ?": minutes: value 61 out of range 0-59
}
