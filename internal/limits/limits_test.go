package limits

import (
	"slices"
	"strings"
	"testing"
)

func TestParseCPUs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want CPUs
		err  string
	}{
		{in: "1", want: CPUs{Count: 1}},
		{in: " 2 ", want: CPUs{Count: 2}},
		{in: "0-1", want: CPUs{List: []int{0, 1}}},
		{in: "0,2-3,2", want: CPUs{List: []int{0, 2, 3}}},
		{in: "3", want: CPUs{Count: 3}},
		{in: "150%", want: CPUs{Quota: 1.5}},
		{in: "50%", want: CPUs{Quota: 0.5}},
		{in: "0", err: "at least 1"},
		{in: "-1", err: "bad CPU list"},
		{in: "1.5", err: "write a quota such as 150%"},
		{in: "0%", err: "above 0%"},
		{in: "0.5%", err: "below 1%"},
		{in: "2-1", err: "bad CPU list"},
		{in: "a", err: "want a count (2), a CPU list"},
		{in: "", err: "empty"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseCPUs(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseCPUs(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || got.Count != tc.want.Count || got.Quota != tc.want.Quota || !slices.Equal(got.List, tc.want.List) {
				t.Fatalf("ParseCPUs(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
			if back, _ := ParseCPUs(got.String()); back.String() != got.String() {
				t.Errorf("String %q does not read back", got.String())
			}
		})
	}
}

func TestFormatList(t *testing.T) {
	for in, want := range map[string]string{"0": "0", "0-3,8": "0-3,8", "0,1,2,5,7,8": "0-2,5,7-8"} {
		list, err := ParseList(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := FormatList(list); got != want {
			t.Errorf("FormatList(%v) = %q, want %q", list, got, want)
		}
	}
}

func TestLimitsString(t *testing.T) {
	l := Limits{CPUs: CPUs{Count: 1}, Memory: 512 << 20, SwapSet: true}
	if got, want := l.String(), "cpus 1, memory 512 MiB, swap 0 B"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if !(Limits{}).IsZero() || l.IsZero() || !(Limits{SwapSet: false, Swap: 0}).IsZero() {
		t.Error("IsZero is wrong")
	}
}
