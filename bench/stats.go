package main

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// quantile returns the q-quantile (0..1) of xs, nearest rank; 0 for none.
// xs is sorted in place.
func quantile(xs []time.Duration, q float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	i = max(0, min(i, len(xs)-1))
	return xs[i]
}

// A Stat is one figure measured in several repetitions: the median of the
// repetitions and their range.
type Stat struct {
	Med float64   `json:"median"`
	Min float64   `json:"min"`
	Max float64   `json:"max"`
	All []float64 `json:"reps"`
	// NA marks a figure that could not be measured.
	NA bool `json:"na,omitempty"`
}

// stat summarises the values of the repetitions.
func stat(vals []float64) Stat {
	if len(vals) == 0 {
		return Stat{NA: true}
	}
	s := slices.Clone(vals)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Stat{Med: med, Min: s[0], Max: s[len(s)-1], All: vals}
}

// A series collects one figure across repetitions.
type series []float64

func (s *series) add(v float64) { *s = append(*s, v) }
func (s series) stat() Stat     { return stat(s) }

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// fmtUs formats microseconds compactly: 87µs, 1.23ms, 4.5s.
func fmtUs(v float64) string {
	switch {
	case v < 1000:
		return fmt.Sprintf("%.0fµs", v)
	case v < 1e6:
		return fmt.Sprintf("%.2fms", v/1e3)
	default:
		return fmt.Sprintf("%.2fs", v/1e6)
	}
}

// fmtStat formats a latency Stat (µs) as "median (min–max)".
func fmtStatUs(s Stat) string {
	if s.NA {
		return "—"
	}
	if len(s.All) < 2 {
		return fmtUs(s.Med)
	}
	return fmt.Sprintf("%s (%s–%s)", fmtUs(s.Med), fmtUs(s.Min), fmtUs(s.Max))
}

// fmtStatN formats a plain Stat with the given precision.
func fmtStatN(s Stat, prec int) string {
	if s.NA {
		return "—"
	}
	if len(s.All) < 2 || s.Min == s.Max {
		return fmt.Sprintf("%.*f", prec, s.Med)
	}
	return fmt.Sprintf("%.*f (%.*f–%.*f)", prec, s.Med, prec, s.Min, prec, s.Max)
}

// pairedRatio returns a/(f·b) taken repetition by repetition, when both were
// measured in the same repetitions, and its median; otherwise the ratio of
// the medians. It returns -1 when either is missing.
func pairedRatio(a, b Stat, f float64) float64 {
	if a.NA || b.NA || f <= 0 {
		return -1
	}
	if len(a.All) == len(b.All) && len(a.All) > 0 {
		var rs []float64
		for i := range a.All {
			if a.All[i] > 0 && b.All[i] > 0 {
				rs = append(rs, a.All[i]/(f*b.All[i]))
			}
		}
		if len(rs) > 0 {
			return stat(rs).Med
		}
	}
	if a.Med <= 0 || b.Med <= 0 {
		return -1
	}
	return a.Med / (f * b.Med)
}

// fmtRatio formats a ratio as "0.83×"; "—" when it is missing.
func fmtRatio(r float64) string {
	switch {
	case r <= 0 || math.IsNaN(r):
		return "—"
	case r >= 10:
		return fmt.Sprintf("%.0f×", r)
	}
	return fmt.Sprintf("%.2f×", r)
}
