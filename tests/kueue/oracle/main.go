// Command oracle is the differential judge of eval-admission's model of Kueue:
// Kueue v0.19.2's own scheduler, queue manager and cache, run in-process over a
// controller-runtime fake client, answer the two questions eval-admission's
// verdicts promise an answer to.
//
//  1. admissible: submitted alone into the set-up, is the evaluation's Workload
//     ever given quota (QuotaReserved)? If not, Kueue's own reason.
//  2. exposed: once it holds quota, does some workload another user could
//     submit make Kueue preempt it? The probes are enumerated (see probes.go)
//     and the first that evicts is reported with Kueue's reason.
//
// Test infrastructure only (Go is never linked into eval-admission). It reads
// one scenario per line on stdin, JSON {"id", "objects": [...], "workload": {...}}
// where objects are what `eval-admission review --cluster` reads and workload
// is the Job or JobSet as it reaches Kueue (after eval-admission's mutation),
// and writes one verdict per line on stdout.
//
// Build: hack/build-oracle.sh (a -overlay adds one file to Kueue's scheduler
// package that exports its scheduling cycle; Kueue's code is not modified).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

type scenario struct {
	ID       string            `json:"id"`
	Objects  []json.RawMessage `json:"objects"`
	Workload json.RawMessage   `json:"workload"`
}

// verdict is one answer. Stage says how far Kueue got: unmanaged (the job
// controller ignores the namespace), no-workload (Kueue cannot build the
// Workload), pending (the Workload never gets quota), admitted.
type verdict struct {
	ID         string `json:"id"`
	Admissible bool   `json:"admissible"`
	Stage      string `json:"stage"`
	Reason     string `json:"reason,omitempty"`
	// Exposed is set only when admissible.
	Exposed        *bool  `json:"exposed,omitempty"`
	Preemptor      string `json:"preemptor,omitempty"`
	EvictionReason string `json:"evictionReason,omitempty"`
	Probes         int    `json:"probes"`
	Error          string `json:"error,omitempty"`
}

var (
	defaultConfig = flag.String("default-config", beside("oracle-default-config.yaml"),
		"Kueue Configuration assumed when a scenario has no kueue-manager-config ConfigMap")
	crdDir      = flag.String("crds", beside("oracle-crds"), "CRDs whose schema defaults are applied to each object")
	crdDefaults schemaDefaults
)

// beside names a file next to the oracle binary, where hack/build-oracle.sh puts it.
func beside(name string) string {
	exe, err := os.Executable()
	if err != nil {
		return name
	}
	return filepath.Join(filepath.Dir(exe), name)
}

func main() {
	flag.Parse()
	// Kueue logs through controller-runtime's logger; the verdicts are the output.
	ctrllog.SetLogger(logr.Discard())
	var err error
	if crdDefaults, err = loadCRDDefaults(*crdDir); err != nil {
		fmt.Fprintln(os.Stderr, "oracle:", err)
		os.Exit(2)
	}
	if path := os.Getenv("ORACLE_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			var sc scenario
			var v verdict
			if jerr := json.Unmarshal(line, &sc); jerr != nil {
				v = verdict{Error: "scenario is not JSON: " + jerr.Error()}
			} else {
				v = judgeSafely(&sc)
			}
			if eerr := enc.Encode(v); eerr != nil {
				fmt.Fprintln(os.Stderr, "oracle: write:", eerr)
				os.Exit(1)
			}
			// One verdict per line, flushed: the caller reads as it writes.
			out.Flush()
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "oracle: read:", err)
			return
		}
	}
}

// judgeSafely turns a panic in a scenario into an error verdict, so one bad
// scenario is reported instead of ending the run.
func judgeSafely(sc *scenario) (v verdict) {
	defer func() {
		if r := recover(); r != nil {
			v = verdict{ID: sc.ID, Error: fmt.Sprintf("panic: %v\n%s", r, debug.Stack())}
		}
	}()
	v, err := judge(sc)
	v.ID = sc.ID
	if err != nil {
		v.Error = err.Error()
	}
	return v
}
