package p

type T struct{ n int }

func dead(a, b int, _ string) int { return a + T{n: 1}.n }

func kept(a int) int { return a }

func value(a int) int { return 0 }

var f = value

func (T) method(a int) {}
