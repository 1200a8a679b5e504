// Command loadlab is a load-testing and performance-experiment tool for web servers.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "loadlab: not yet implemented")
	os.Exit(1)
}
