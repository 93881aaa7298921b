package testenv

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of utime and stime in /proc/<pid>/stat (USER_HZ,
// 100 on the Linux systems the tests run on).
const userHZ = 100

// ProcessCPU returns the CPU time (user and system) process pid has used so
// far, read from /proc/<pid>/stat, in steps of 10 ms; 0 when it cannot be
// read (no /proc, or the process is gone). Benchmarks compare CPU per unit
// of work, which the other jobs of a shared machine do not inflate as they
// do wall-clock time.
func ProcessCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command's name, in parentheses, may hold spaces: the fields
	// counted below start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	// f[0] is the state, field 3; utime and stime are fields 14 and 15.
	user, err1 := strconv.ParseInt(f[11], 10, 64)
	sys, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(user+sys) * time.Second / userHZ
}
