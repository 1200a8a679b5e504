package result

// Failure says why an exchange failed to produce a response.
type Failure uint8

// The failure classes. A response with a 4xx or 5xx status is not a failure
// here: it is a response, and the caller classifies it by its status.
const (
	FailureNone     Failure = iota
	FailureConnect          // could not connect: refused, unreachable, out of sockets
	FailureTimeout          // no whole response within the timeout
	FailureReset            // the connection was closed or reset before the response ended
	FailureProtocol         // the response was not valid HTTP/1.x or was over a size limit
	FailureTLS              // the TLS handshake failed (bad certificate, protocol error)
	FailureStream           // HTTP/2: the server reset the stream (RST_STREAM)
	FailureGoaway           // HTTP/2: the server sent GOAWAY and closed the connection before the response
)

var failureNames = [...]string{"", "connect", "timeout", "reset", "protocol", "tls", "stream", "goaway"}

func (f Failure) String() string { return failureNames[f] }
