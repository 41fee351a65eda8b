package cloud

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"k8s.io/klog/v2"
)

// maxBody bounds what is read of one answer; the largest, Azure's instance
// document, is a few kilobytes.
const maxBody = 1 << 20

// Backoff between retries: it starts at firstBackoff and doubles up to
// maxBackoff, until the overall deadline.
const (
	firstBackoff = 200 * time.Millisecond
	maxBackoff   = 2 * time.Second
)

// client sends requests to one metadata service.
type client struct {
	base     string
	hc       *http.Client
	timeout  time.Duration // per request
	attempts int           // requests sent
}

func newClient(base string, timeout time.Duration) *client {
	return &client{
		base:    base,
		timeout: timeout,
		hc: &http.Client{
			Transport: &http.Transport{
				// The metadata service is link-local: a proxy from
				// the environment (HTTP_PROXY) must not be asked for
				// it, as Azure's IMDS documentation insists.
				Proxy:               nil,
				DialContext:         (&net.Dialer{Timeout: timeout}).DialContext,
				MaxIdleConnsPerHost: 1,
			},
			// A redirect would carry the request's headers (the
			// IMDSv2 token among them) elsewhere: none is followed.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

func (c *client) close() { c.hc.CloseIdleConnections() }

// request is one HTTP request to the metadata service.
type request struct {
	method string
	path   string // below the base URL, with its query
	header http.Header
}

func (r request) String() string { return r.method + " " + r.path }

// statusError is an answer other than 200 OK.
type statusError struct {
	req    request
	code   int
	status string
	// again makes a code that is final in general worth a retry (AWS
	// IMDSv2's 401 for a token that expired in between).
	again bool
}

func (e *statusError) Error() string { return fmt.Sprintf("%s: %s", e.req, e.status) }

// retryable reports whether a failed request may succeed if sent again: no
// answer (a service still starting, a lost packet), a server error, a rate
// limit (429), and Azure IMDS's 410, which its documentation answers with
// "retry after some time for a max of 70 seconds"
// (https://learn.microsoft.com/azure/virtual-machines/instance-metadata-service#errors-and-debugging).
// Other 4xx answers are final: the request or the service is wrong, and
// asking again changes nothing.
func retryable(err error) bool {
	var se *statusError
	if !errors.As(err, &se) {
		return true // transport errors and timeouts
	}
	return se.again || se.code >= 500 || se.code == http.StatusTooManyRequests || se.code == http.StatusGone
}

// once sends req and returns the body of a 200 OK answer, or a
// *statusError for any other status.
func (c *client) once(ctx context.Context, req request) ([]byte, error) {
	c.attempts++
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(rctx, req.method, c.base+req.path, http.NoBody)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", req, err)
	}
	for k, vs := range req.header {
		hr.Header[k] = vs
	}
	resp, err := c.hc.Do(hr)
	if err != nil {
		switch {
		case errors.Is(ctx.Err(), context.Canceled):
			return nil, fmt.Errorf("%s: %w: start-up cancelled", req, errNoAnswer)
		case ctx.Err() != nil:
			return nil, fmt.Errorf("%s: %w before the deadline", req, errNoAnswer)
		case rctx.Err() != nil:
			return nil, fmt.Errorf("%s: %w within %s", req, errNoAnswer, c.timeout)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is in the caller's message already
		}
		return nil, fmt.Errorf("%s: %w", req, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &statusError{req: req, code: resp.StatusCode, status: resp.Status}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("%s: read the answer: %w", req, err)
	}
	return body, nil
}

// retry runs op until it succeeds, fails for good (!retryable) or ctx
// ends, waiting between attempts. When ctx ends during an attempt, the
// failure of the attempt before, if any, is returned: the answer of a
// service that answers with errors says more than the deadline.
func retry(ctx context.Context, op func(context.Context) error) error {
	logger := klog.FromContext(ctx)
	delay := firstBackoff
	var last error
	for {
		err := op(ctx)
		if err != nil && last != nil && ctx.Err() != nil && errors.Is(err, errNoAnswer) {
			return last
		}
		if err == nil || !retryable(err) {
			return err
		}
		last = err
		logger.V(4).Info("Metadata request failed; retrying", "err", err, "delay", delay)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		delay = min(2*delay, maxBackoff)
	}
}

// get sends req until it is answered with 200 OK and returns the body.
func (c *client) get(ctx context.Context, req request) ([]byte, error) {
	var body []byte
	err := retry(ctx, func(ctx context.Context) error {
		var err error
		body, err = c.once(ctx, req)
		return err
	})
	return body, err
}
