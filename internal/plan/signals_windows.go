package plan

import "syscall"

// signals are the names stop_signal accepts; Windows has no USR1 or USR2
// (and loadlab's server watcher ends a tree there without signals).
var signals = map[string]syscall.Signal{"TERM": syscall.SIGTERM, "INT": syscall.SIGINT, "QUIT": syscall.SIGQUIT, "HUP": syscall.SIGHUP, "KILL": syscall.SIGKILL}
