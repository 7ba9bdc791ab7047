// Added to sigs.k8s.io/kueue/pkg/scheduler by a Go -overlay when
// tests/kueue/oracle is built (hack/build-oracle.sh); Kueue's own files are
// not touched. It exports the two seams Kueue's scheduler_test.go uses: one
// scheduling cycle, and a hook to wait for the admission goroutines.

package scheduler

import (
	"context"

	"sigs.k8s.io/kueue/pkg/util/routine"
)

// ScheduleOnceForOracle runs one scheduling cycle (Scheduler.schedule).
func (s *Scheduler) ScheduleOnceForOracle(ctx context.Context) {
	s.schedule(ctx)
}

// SetAdmissionRoutineWrapperForOracle lets the caller wait for admissions.
func (s *Scheduler) SetAdmissionRoutineWrapperForOracle(wrapper routine.Wrapper) {
	s.setAdmissionRoutineWrapper(wrapper)
}
