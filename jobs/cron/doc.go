// Package cron implements Quartz cron expressions as ElasticJob users write
// them, with a pure, allocation-free Next computation.
//
// # Syntax
//
// An expression has 6 or 7 fields separated by whitespace:
//
//	seconds minutes hours day-of-month month day-of-week [year]
//
//	field          values               special characters
//	seconds        0-59                 * , - /
//	minutes        0-59                 * , - /
//	hours          0-23                 * , - /
//	day-of-month   1-31                 * , - / ? L L-n LW nW
//	month          1-12 or JAN-DEC      * , - /
//	day-of-week    1-7 or SUN-SAT       * , - / ? L nL n#k
//	year           1970-2199            * , - / ?   (optional; omitted = every year)
//
// Day-of-week is numbered as in Quartz: 1=SUN, 2=MON, ..., 7=SAT. Names are
// case-insensitive.
//
//   - "*" every value; "?" no specific value (day-of-month, day-of-week and,
//     as the ElasticJob quick start's "0/5 * * * * * ?" needs, year).
//   - "a,b" list; "a-b" range (names allowed: MON-FRI, JAN-MAR); a range
//     whose start is after its end wraps around in every field but year
//     ("22-2" hours = 22,23,0,1,2; "FRI-MON").
//   - "a/n" every n-th value from a to the field maximum; "*/n" and "/n"
//     from the field minimum; "a-b/n" within the range. n ranges from 1 to
//     the size of the field (0 is rejected).
//   - day-of-month "L" last day; "L-n" n-th day before the last (L-2 = third
//     to last; n 0-30); "LW" last weekday (Mon-Fri) of the month; "nW" the
//     weekday nearest to day n: a Saturday moves to the Friday before, a
//     Sunday to the Monday after, never crossing the month (1W on a Saturday
//     is Monday the 3rd; a Sunday that is the last day moves to Friday). In a
//     month without day n (31W in April, 30W in February) nW does not fire,
//     like a plain 31.
//   - day-of-week "L" alone is 7 (Saturday); "nL" the last weekday n of the
//     month (6L = last Friday); "n#k" the k-th weekday n (6#3 = third
//     Friday, k 1-5; a month without a fifth occurrence is skipped).
//
// Quartz requires "?" in one of day-of-month and day-of-week. Parse is
// lenient where the meaning is clear: when one is "*" and the other is
// restricted, the "*" acts as "?"; when both are "*" or "?" every day
// matches. When both are restricted Parse rejects the expression ("specify ?
// in day-of-month or day-of-week").
//
// Parse rejects out-of-range values, zero or oversized steps, unknown names,
// wrong field counts and expressions longer than MaxExprLen characters with
// a *ParseError naming the field.
//
// # Time zones and daylight saving time
//
// Next matches the fields against the wall clock of the given location and
// returns the first instant strictly after t. Results are strictly
// increasing in absolute time when Next is called on its own output, and
// Next gives up (zero Time) once the wall clock passes the end of 2199.
//
// Spring forward (gap): wall-clock times that do not exist that day fire
// once, at the first instant after the gap (the transition instant), and are
// not repeated. "0 30 2 * * ?" in America/New_York fires on 2026-03-08 at
// 03:00 EDT; "0/5 * * * * ?" fires at 01:59:55 EST, once at 03:00:00 EDT for
// the whole missing hour, then 03:00:05 EDT. This applies equally to
// 30-minute shifts (Australia/Lord_Howe).
//
// Fall back (overlap): the behaviour depends on the hours field.
//   - Fixed-time schedules, whose hours field is a value, list or range
//     without a step ("0 30 1 * * ?", "0 0 9-17 * * ?"), fire only in the
//     first occurrence of the repeated wall-clock times; "0 30 1 * * ?" fires
//     at 01:30 EDT on 2026-11-01 and not again at 01:30 EST.
//   - Interval schedules, whose hours field is "*" or contains a step ("*/2",
//     "0/1", "0-23/3"), fire in both occurrences, so "0/5 * * * * ?" keeps
//     firing every 5 seconds of real time through the repeated hour.
//
// Any other offset change of the zone (a non-DST change of standard time) is
// treated the same way: a forward jump is a gap, a backward jump an overlap.
package cron
