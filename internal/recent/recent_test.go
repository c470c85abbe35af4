package recent

import (
	"strconv"
	"testing"
)

// TestSetForgetsTheOldest: past Max, each add forgets the oldest; a repeated add changes
// nothing; Remove forgets at once.
func TestSetForgetsTheOldest(t *testing.T) {
	s := Set{Max: 3}
	for i := range 3 {
		s.Add(strconv.Itoa(i))
	}
	s.Add("1") // already in: not added again
	s.Add("3") // forgets 0
	s.Add("4") // forgets 1
	for id, want := range map[string]bool{"0": false, "1": false, "2": true, "3": true, "4": true} {
		if s.Has(id) != want {
			t.Errorf("Has(%s) = %v, want %v", id, !want, want)
		}
	}
	s.Remove("3")
	if s.Has("3") {
		t.Error("3 kept after Remove")
	}
	var z Set
	for i := range DefaultMax + 1 {
		z.Add(strconv.Itoa(i))
	}
	if z.Has("0") || !z.Has("1") || !z.Has(strconv.Itoa(DefaultMax)) {
		t.Error("the zero Set does not hold DefaultMax ids")
	}
}
