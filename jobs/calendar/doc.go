// Package calendar is a namespace's named business calendars: the days a
// job fires on (a set of weekdays, Mon–Fri by choice) and the dates, date
// ranges and times it must not fire in (holidays), one-off or repeating
// yearly or weekly, in one time zone; importable from iCalendar (.ics)
// files. A compiled calendar is the cron.Excluder a job's cron.Plan
// consults: a fire whose nominal instant it excludes is skipped, not moved
// (Quartz's HolidayCalendar).
package calendar
