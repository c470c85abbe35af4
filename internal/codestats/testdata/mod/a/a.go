package a

type T struct{}

func (T) A()  {}
func (*T) B() {}

func long() {
	// 1
	// 2
}
