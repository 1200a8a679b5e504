package httpx

// Linux has both engines; epoll is the default.
const platformEngine = EngineEpoll

func newPoller(l *Loop, e Engine) (poller, error) {
	if e == EngineEpoll {
		return newEpollPoller(l)
	}
	return newPortablePoller(l), nil
}
