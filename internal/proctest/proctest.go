// Package proctest holds what the programs that start other processes on
// this machine (the end-to-end tests, tsdb-bench, the S3 test server)
// share: a buffer for a child's output, free local ports, and a process's
// resident memory.
package proctest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// LockedBuffer collects a child's stdout and stderr, which the exec
// package writes from two goroutines, while others read it.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was written so far.
func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// FreeAddr returns a 127.0.0.1:port address nothing listens on now.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// RSS returns a process's resident set size in bytes (Linux).
func RSS(pid int) (int64, error) { return statusBytes(pid, "VmRSS") }

// FileRSS returns the part of a process's resident set that is file
// pages (memory-mapped files the kernel can write back and drop, such as
// badger's value log), in bytes (Linux).
func FileRSS(pid int) (int64, error) { return statusBytes(pid, "RssFile") }

// PeakRSS returns the largest resident set size a process has had, in
// bytes (Linux).
func PeakRSS(pid int) (int64, error) { return statusBytes(pid, "VmHWM") }

// statusBytes reads a memory field (in kB) of /proc/PID/status.
func statusBytes(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field+":" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("proctest: no %s in /proc status", field)
}
