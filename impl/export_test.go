package impl

// SetMutGreaterEqual turns on, for the external tests in the model world,
// the test-only >= mutant of a Syncer's skip test.
func SetMutGreaterEqual(s *Syncer, on bool) { s.mutGreaterEqual = on }
