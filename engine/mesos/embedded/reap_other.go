//go:build !linux

package embedded

func reap(string, bool, func(string) bool) int { return 0 }

func reapAll(string, bool, func(string) bool) map[string]int { return nil }
