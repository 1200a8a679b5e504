//go:build !linux

package httpx

import "fmt"

// Outside Linux only the portable engine exists.
const platformEngine = EnginePortable

func newPoller(l *Loop, e Engine) (poller, error) {
	if e == EngineEpoll {
		return nil, fmt.Errorf("the epoll engine is Linux only: use %s=portable, or leave it unset", EngineEnv)
	}
	return newPortablePoller(l), nil
}
