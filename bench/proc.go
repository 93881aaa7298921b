package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat.
// It is 100 on every Linux the benchmark targets.
const clockTicks = 100

// cpuSeconds returns utime+stime of pid in seconds, or -1 when /proc cannot
// be read (another user's process, or no /proc).
func cpuSeconds(pid int) float64 {
	if pid <= 0 {
		return -1
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// The command name may contain spaces; fields start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime is field 14, stime 15.
	if len(f) < 13 {
		return -1
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return (ut + st) / clockTicks
}

// statusKB returns a "kB" field of /proc/<pid>/status (VmHWM, VmRSS), or -1.
func statusKB(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			v = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB"))
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// findPID returns the pid of the oldest process whose command name is comm
// (mariadbd, redis-server), or 0.
func findPID(comm string) int {
	pids := findPIDs(comm)
	if len(pids) == 0 {
		return 0
	}
	return pids[0]
}

// findPIDs returns the pids of the processes whose command name is comm,
// oldest (lowest) first.
func findPIDs(comm string) []int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []int
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "comm"))
		if err != nil || strings.TrimSpace(string(b)) != comm {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	return pids
}

// cpuMeter measures the CPU seconds a set of processes spends between
// Start and Stop; processes that start in between count from zero.
type cpuMeter struct {
	pids  func() []int
	start map[int]float64
}

func startCPU(pid int) cpuMeter {
	return startCPUs(func() []int {
		if pid <= 0 {
			return nil
		}
		return []int{pid}
	})
}

// startCPUs measures the processes pids returns, asked at Start and Stop.
func startCPUs(pids func() []int) cpuMeter {
	m := cpuMeter{pids: pids, start: map[int]float64{}}
	for _, pid := range pids() {
		m.start[pid] = cpuSeconds(pid)
	}
	return m
}

// Stop returns the CPU seconds since Start, or -1 when unreadable or there
// is no process.
func (m cpuMeter) Stop() float64 {
	pids := m.pids()
	if len(pids) == 0 {
		return -1
	}
	total := 0.0
	for _, pid := range pids {
		end := cpuSeconds(pid)
		start, seen := m.start[pid]
		if end < 0 || (seen && start < 0) {
			return -1
		}
		total += end - start
	}
	return total
}
