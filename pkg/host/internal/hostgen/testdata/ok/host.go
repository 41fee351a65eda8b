// Package host is a fixture: interfaces with the shapes hostgen must
// handle.
package host

import "context"

type Kind int

type Thing struct{ N int }

type Host struct {
	Things Things
	Other  Other
}

type Things interface {
	// Count is declared first and must be written first.
	Count(ctx context.Context) (int, error)
	Apply(context.Context, Kind, ...string) error
	Get(ctx context.Context, start string, w *Thing) (Thing, Kind, bool, []byte, error)
}

type Other interface {
	Name(ctx context.Context) (string, error)
}
