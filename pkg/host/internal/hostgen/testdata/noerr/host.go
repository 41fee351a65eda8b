package host

import "context"

type Host struct{ Things Things }

type Things interface {
	Count(ctx context.Context) int
}
