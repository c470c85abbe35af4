//go:build !linux

package cgroups

func cloneIntoCgroup() bool { return false }
