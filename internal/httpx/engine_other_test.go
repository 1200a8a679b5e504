//go:build !linux

package httpx

var platformEngines = []Engine{EnginePortable}
