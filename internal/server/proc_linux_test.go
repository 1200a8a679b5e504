//go:build linux

package server

import (
	"os"
	"testing"
)

func TestParseStat(t *testing.T) {
	// A command name with spaces and parentheses, as a process can give itself.
	line := "4242 (my (weird) name) S 1 4242 4242 0 -1 4194560 120 3 7 2 150 30 11 4 20 0 3 0 98765 12345678 2560 " +
		"18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
	st, err := parseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	want := procStat{
		pid: 4242, name: "my (weird) name", state: 'S', ppid: 1, pgrp: 4242, session: 4242,
		majflt: 7, cmajflt: 2, utime: 150, stime: 30, cutime: 11, cstime: 4,
		threads: 3, start: 98765,
	}
	if st != want {
		t.Errorf("parseStat =\n%+v\nwant\n%+v", st, want)
	}
	for _, bad := range []string{"", "12 (x", "12 (x) S 1", "x (y) S 1 2 3 0 -1 0 0 0 0 0 0 0 0 0 0 0 1 0 1 1 1"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) succeeded", bad)
		}
	}
}

func TestParseStatOfSelf(t *testing.T) {
	st, err := newProcReader().stat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.pid != os.Getpid() || st.ppid != os.Getppid() || st.threads < 1 || st.start == 0 {
		t.Errorf("stat of self = %+v", st)
	}
}

func TestParseMemoryFiles(t *testing.T) {
	rollup := "5586ad96b000-7fff214ab000 ---p 00000000 00:00 0    [rollup]\n" +
		"Rss:                1612 kB\nPss_Anon:            112 kB\n" +
		"Pss:                 451 kB\nSwapPss:               4 kB\n"
	if pss, err := parseRollupPSS([]byte(rollup)); err != nil || pss != 451<<10 {
		t.Errorf("parseRollupPSS = %d, %v; want %d", pss, err, 451<<10)
	}
	if _, err := parseRollupPSS([]byte("Rss: 1 kB\n")); err == nil {
		t.Error("parseRollupPSS without a Pss line succeeded")
	}
	status := "Name:\tx\nVmRSS:\t    1712 kB\nRssAnon:\t     112 kB\nVmSwap:\t       8 kB\n"
	tests := []struct {
		key  string
		want int64
		ok   bool
	}{{"\nVmRSS:", 1712 << 10, true}, {"\nVmSwap:", 8 << 10, true}, {"\nVmHWM:", 0, false}}
	for _, tt := range tests {
		if got, ok := fieldKB([]byte(status), tt.key); got != tt.want || ok != tt.ok {
			t.Errorf("fieldKB(%q) = %d, %v; want %d, %v", tt.key, got, ok, tt.want, tt.ok)
		}
	}
	rss, _, err := newProcReader().statusMemory(os.Getpid())
	if err != nil || rss <= 0 {
		t.Errorf("statusMemory of self = %d, %v", rss, err)
	}
}

func TestCountCPUList(t *testing.T) {
	tests := []struct {
		in   string
		want int
		ok   bool
	}{
		{"0", 1, true}, {"0-1", 2, true}, {"0-3,8,10-11", 7, true},
		{"", 0, false}, {"3-1", 0, false}, {"a", 0, false},
	}
	for _, tt := range tests {
		got, ok := countCPUList(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("countCPUList(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestClockTicks(t *testing.T) {
	if got := clockTicks(); got != 100 {
		t.Logf("USER_HZ is %d on this machine", got) // legal, but worth seeing
	}
	if clockTicks() <= 0 {
		t.Error("clockTicks must be positive")
	}
}

func TestCPUCapacity(t *testing.T) {
	c := cpuCapacity(os.Getpid())
	if c <= 0 || c > float64(onlineCPUs()) {
		t.Errorf("cpuCapacity = %v, online CPUs %d", c, onlineCPUs())
	}
}
