package main

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Machine describes where the run took place.
type Machine struct {
	CPU     string `json:"cpu"`
	Cores   int    `json:"cores"`
	MemGiB  string `json:"mem_gib,omitempty"`
	OS      string `json:"os"`
	Kernel  string `json:"kernel,omitempty"`
	Go      string `json:"go"`
	Redis   string `json:"redis"`
	GoRedis string `json:"go_redis"`
}

func machine(redisVersion string) Machine {
	m := Machine{
		CPU:     "unknown",
		Cores:   runtime.NumCPU(),
		OS:      runtime.GOOS + "/" + runtime.GOARCH,
		Go:      runtime.Version(),
		Redis:   redisVersion,
		GoRedis: verGoRedis,
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				f := strings.Fields(v)
				if kb, err := strconv.ParseFloat(f[0], 64); err == nil {
					m.MemGiB = strconv.FormatFloat(kb/1024/1024, 'f', 1, 64)
				}
			}
		}
	}
	return m
}

// Load is what else the machine was doing during the run.
type Load struct {
	LoadAvgStart string  `json:"loadavg_start"`
	LoadAvgEnd   string  `json:"loadavg_end"`
	Wall         float64 `json:"wall_s"`
	BusyCores    float64 `json:"busy_cores"`  // all processes, in cores
	BenchCores   float64 `json:"bench_cores"` // this program
	RedisCores   float64 `json:"redis_cores"` // its redis-servers
	OtherCores   float64 `json:"other_cores"` // everything else
	StealCores   float64 `json:"steal_cores"` // taken by the hypervisor
	Known        bool    `json:"known"`       // /proc was readable
}

type cpuSnap struct {
	at    time.Time
	busy  float64 // seconds, all CPUs
	steal float64
	self  float64
	redis map[int]float64
	ok    bool
}

const clockTick = 100.0 // USER_HZ on Linux

func snapCPU(pids []int) cpuSnap {
	s := cpuSnap{at: time.Now(), redis: map[int]float64{}}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return s
	}
	var busy float64
	for i, v := range f[1:] {
		n, _ := strconv.ParseFloat(v, 64)
		switch {
		case i == 7:
			s.steal = n / clockTick
			continue
		case i == 3 || i == 4 || i >= 8: // idle, iowait, guest (already in user)
			continue
		}
		busy += n
	}
	s.busy = busy / clockTick
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.self = tv(ru.Utime) + tv(ru.Stime)
	}
	for _, pid := range pids {
		s.redis[pid] = procCPU(pid)
	}
	s.ok = true
	return s
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

// procCPU returns the CPU seconds used by process pid.
func procCPU(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / clockTick
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func load(a, b cpuSnap, la0, la1 string) Load {
	l := Load{LoadAvgStart: la0, LoadAvgEnd: la1, Wall: b.at.Sub(a.at).Seconds()}
	if !a.ok || !b.ok || l.Wall <= 0 {
		return l
	}
	var redis float64
	for pid, v := range b.redis {
		redis += v - a.redis[pid]
	}
	l.Known = true
	l.BusyCores = (b.busy - a.busy) / l.Wall
	l.BenchCores = (b.self - a.self) / l.Wall
	l.RedisCores = redis / l.Wall
	l.OtherCores = max(0, l.BusyCores-l.BenchCores-l.RedisCores)
	l.StealCores = (b.steal - a.steal) / l.Wall
	return l
}
