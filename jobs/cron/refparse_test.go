package cron

import (
	"math/big"
	"strings"
)

// refParse is a second, deliberately plain reading of the package
// documentation's syntax, written without looking at Parse's internals. It
// builds the refSpec the slow reference matcher (property_test.go) checks
// Next against. It reports the index of the first field it rejects
// (numFields for a problem of the whole expression, such as the field count
// or both day fields restricted).
func refParse(expr string) (sp *refSpec, badField int, ok bool) {
	if len(expr) > MaxExprLen {
		return nil, numFields, false
	}
	fields := strings.Fields(strings.ToUpper(expr))
	if len(fields) != 6 && len(fields) != 7 {
		return nil, numFields, false
	}
	sp = &refSpec{domFree: true, dowFree: true}
	for f, text := range fields {
		if !refField(sp, f, text) {
			return nil, f, false
		}
	}
	if !sp.domFree && !sp.dowFree {
		return nil, numFields, false
	}
	return sp, 0, true
}

// refField reads one upper-cased field into sp.
func refField(sp *refSpec, f int, text string) bool {
	switch {
	case text == "?" && (f == fDom || f == fDow || f == fYear):
		return true // no restriction
	case text == "?":
		return false
	case text == "*":
		return true
	}
	switch f {
	case fDom:
		sp.domFree = false
	case fDow:
		sp.dowFree = false
	}
	sp.sets[f] = map[int]bool{}
	for _, item := range strings.Split(text, ",") {
		if !refItem(sp, f, item) {
			return false
		}
	}
	return true
}

func refItem(sp *refSpec, f int, item string) bool {
	if f == fDom {
		if handled, ok := refDomSpecial(sp, item); handled {
			return ok
		}
	}
	if f == fDow {
		if handled, ok := refDowSpecial(sp, item); handled {
			return ok
		}
	}
	lo, hi := fieldBounds[f].min, fieldBounds[f].max
	span := hi - lo + 1
	rng, stepText, hasStep := strings.Cut(item, "/")
	step := 1
	if hasStep {
		n, ok := refNumber(stepText)
		if !ok || n < 1 || n > span {
			return false
		}
		step = n
	}
	var from, to int
	switch {
	case rng == "*" || (rng == "" && hasStep):
		from, to = lo, hi
	default:
		a, b, isRange := strings.Cut(rng, "-")
		var ok bool
		if from, ok = refValue(f, a); !ok {
			return false
		}
		switch {
		case isRange:
			if to, ok = refValue(f, b); !ok {
				return false
			}
		case hasStep:
			to = hi
		default:
			to = from
		}
	}
	// Every step-th value of the (possibly wrapping) range.
	var values []int
	for v := from; ; v++ {
		if v > hi {
			if f == fYear {
				return false // a year range never wraps
			}
			v = lo
		}
		values = append(values, v)
		if v == to {
			break
		}
	}
	for i := 0; i < len(values); i += step {
		sp.sets[f][values[i]] = true
	}
	return true
}

// refDomSpecial reads L, L-n, LW and nW.
func refDomSpecial(sp *refSpec, item string) (handled, ok bool) {
	switch {
	case item == "L":
		sp.domLast = append(sp.domLast, 0)
	case item == "LW":
		sp.domLW = true
	case strings.HasPrefix(item, "L-"):
		n, ok := refNumber(item[2:])
		if !ok || n > 30 {
			return true, false
		}
		sp.domLast = append(sp.domLast, n)
	case strings.HasSuffix(item, "W"):
		n, ok := refNumber(item[:len(item)-1])
		if !ok || n < 1 || n > 31 {
			return true, false
		}
		sp.domNearest = append(sp.domNearest, n)
	case strings.ContainsAny(item, "LW#?"):
		return true, false
	default:
		return false, false
	}
	return true, true
}

// refDowSpecial reads L (Saturday), nL and n#k.
func refDowSpecial(sp *refSpec, item string) (handled, ok bool) {
	switch {
	case item == "L":
		sp.sets[fDow][7] = true
	case strings.HasSuffix(item, "L"):
		n, ok := refValue(fDow, item[:len(item)-1])
		if !ok {
			return true, false
		}
		sp.dowLast = append(sp.dowLast, n)
	case strings.Contains(item, "#"):
		a, b, _ := strings.Cut(item, "#")
		n, ok1 := refValue(fDow, a)
		k, ok2 := refNumber(b)
		if !ok1 || !ok2 || k < 1 || k > 5 {
			return true, false
		}
		sp.dowNth = append(sp.dowNth, [2]int{n, k})
	case strings.Contains(item, "?"):
		return true, false
	default:
		return false, false
	}
	return true, true
}

// refValue reads a number or (month and day-of-week) a name within the
// field's bounds.
func refValue(f int, text string) (int, bool) {
	names := map[int][]string{fMonth: refMonthNames, fDow: refDowNames}[f]
	for v, name := range names {
		if name != "" && text == name {
			return v, true
		}
	}
	n, ok := refNumber(text)
	return n, ok && n >= fieldBounds[f].min && n <= fieldBounds[f].max
}

// refNumber reads an unsigned decimal number of any length; a value too
// large for an int is reported as -1 (out of every range).
func refNumber(text string) (int, bool) {
	if text == "" || strings.Trim(text, "0123456789") != "" {
		return 0, false
	}
	n, _ := new(big.Int).SetString(text, 10)
	if !n.IsInt64() || n.Int64() > 1<<20 {
		return -1, true
	}
	return int(n.Int64()), true
}
