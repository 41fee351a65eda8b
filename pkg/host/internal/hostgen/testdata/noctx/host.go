package host

type Host struct{ Things Things }

type Things interface {
	Count(n int) (int, error)
}
