//go:build !linux

package tenant

import "errors"

// Init returns at once: there is no tenant init off Linux.
func Init() {}

// Cloneflags are none off Linux.
const Cloneflags = 0

// Probe says tenants cannot be isolated off Linux.
func Probe() error { return errors.New("tenant isolation needs Linux PID and mount namespaces") }

// Private is empty off Linux.
var Private []string
