package soak

import (
	"fmt"
	"slices"
	"strings"
)

// only is a shape whose nemesis draws from some of its fault kinds
// (ejsoak -faults: replaying one kind of fault).
type only struct {
	Shape
	kinds []string
}

func (o only) Faults() []FaultKind {
	var out []FaultKind
	for _, k := range o.Shape.Faults() {
		if slices.Contains(o.kinds, k.Name) {
			out = append(out, k)
		}
	}
	return out
}

// onlyFaults is s drawing only the named kinds (all when none is named);
// a name the shape does not have is an error naming those it has.
func onlyFaults(s Shape, kinds []string) (Shape, error) {
	if len(kinds) == 0 {
		return s, nil
	}
	var have []string
	for _, k := range s.Faults() {
		have = append(have, k.Name)
	}
	for _, k := range kinds {
		if !slices.Contains(have, k) {
			return nil, fmt.Errorf("soak: shape %s has no fault %q (it has: %s)", s.Name(), k, strings.Join(have, ", "))
		}
	}
	return only{Shape: s, kinds: kinds}, nil
}
