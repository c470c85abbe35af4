package offers

import (
	"fmt"
	"math"
)

// Milli is an amount of CPU in thousandths of a core. Fixed-point arithmetic
// makes 0.1+0.2 cores exactly 0.3 cores, which float64 does not.
type Milli int64

// CPUs converts a float number of cores to Milli, rounding to the nearest
// thousandth (0.1 -> 100). NaN and negative inputs give 0; values too large
// for int64 saturate.
func CPUs(f float64) Milli {
	if !(f > 0) { // also catches NaN
		return 0
	}
	v := math.Round(f * 1000)
	if v >= math.MaxInt64 { // float64(MaxInt64) is 2^63, out of range
		return math.MaxInt64
	}
	return Milli(v)
}

// Cores returns m as a float number of cores, for the Mesos scalar resource.
func (m Milli) Cores() float64 { return float64(m) / 1000 }

// String formats m as cores with three decimals: "0.100".
func (m Milli) String() string {
	sign, u := "", uint64(m)
	if m < 0 {
		sign, u = "-", -u // two's complement negation also handles MinInt64
	}
	return fmt.Sprintf("%s%d.%03d", sign, u/1000, u%1000)
}

// MemMB converts a float number of megabytes to whole MB, rounding any
// fractional part up (0.5 -> 1, 64.2 -> 65). A value within 1e-9 (relative)
// above a whole number is float noise and rounds down (64.00000000000001 ->
// 64). NaN and negative inputs give 0; values too large for int64 saturate.
func MemMB(f float64) int64 {
	if !(f > 0) {
		return 0
	}
	fl := math.Floor(f)
	if f-fl > 1e-9*math.Max(1, f) {
		fl++
	}
	if fl >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(fl)
}

// Resources is an amount of CPU and memory.
type Resources struct {
	CPU   Milli
	MemMB int64
}

// Add returns r + o component-wise.
func (r Resources) Add(o Resources) Resources {
	return Resources{CPU: r.CPU + o.CPU, MemMB: r.MemMB + o.MemMB}
}

// Sub returns r - o component-wise; the result may be negative.
func (r Resources) Sub(o Resources) Resources {
	return Resources{CPU: r.CPU - o.CPU, MemMB: r.MemMB - o.MemMB}
}

// Fits reports whether r fits within capacity: both components of r are no
// larger than those of capacity. Read it as "r fits (in) capacity".
func (r Resources) Fits(capacity Resources) bool {
	return r.CPU <= capacity.CPU && r.MemMB <= capacity.MemMB
}

// IsZero reports whether r has no CPU and no memory.
func (r Resources) IsZero() bool { return r.CPU == 0 && r.MemMB == 0 }

// String formats r as "cpus=0.100 mem=64MB".
func (r Resources) String() string {
	return fmt.Sprintf("cpus=%s mem=%dMB", r.CPU, r.MemMB)
}
