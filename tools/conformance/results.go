package conformance

import (
	"slices"
	"sync"
	"testing"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/gateway-api/pkg/features"
)

// Outcome is what happened to one conformance test.
type Outcome string

const (
	Passed Outcome = "passed"
	Failed Outcome = "failed"
	// Skipped: the test was skipped although every feature it needs is claimed
	// (explicitly skipped, another test selected, or skipped by the test itself).
	Skipped Outcome = "skipped"
	// NotSupported: the test needs a feature the implementation does not claim.
	NotSupported Outcome = "not supported"
)

// TestRecord is one test's result as seen from its own *testing.T, which is
// reliable for parallel tests too (they finish before the parent's cleanup).
type TestRecord struct {
	Name        string
	Features    []features.FeatureName
	Outcome     Outcome
	Provisional bool
}

// Recorder collects per-test results through the suite's Hook.
type Recorder struct {
	mu      sync.Mutex
	records map[string]TestRecord
}

func NewRecorder() *Recorder {
	return &Recorder{records: map[string]TestRecord{}}
}

// Hook has the signature suite.ConformanceOptions.Hook expects; the suite
// calls it from each test's cleanup.
func (r *Recorder) Hook(t *testing.T, test suite.ConformanceTest, s *suite.ConformanceTestSuite) {
	outcome := Passed
	switch {
	case t.Failed():
		outcome = Failed
	case t.Skipped() && !s.SupportedFeatures.HasAll(test.Features...):
		outcome = NotSupported
	case t.Skipped():
		outcome = Skipped
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records[test.ShortName] = TestRecord{
		Name:        test.ShortName,
		Features:    slices.Clone(test.Features),
		Outcome:     outcome,
		Provisional: test.Provisional,
	}
}

// Records returns every recorded test, sorted by name.
func (r *Recorder) Records() []TestRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]TestRecord, 0, len(r.records))
	for _, rec := range r.records {
		out = append(out, rec)
	}
	slices.SortFunc(out, func(a, b TestRecord) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out
}

// Counts tallies outcomes.
type Counts map[Outcome]int

func (c Counts) Total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// knownProfiles mirrors the suite's own registry, which it does not export.
var knownProfiles = map[suite.ConformanceProfileName]suite.ConformanceProfile{
	suite.GatewayHTTPConformanceProfileName: suite.GatewayHTTPConformanceProfile,
	suite.GatewayTLSConformanceProfileName:  suite.GatewayTLSConformanceProfile,
	suite.GatewayTCPConformanceProfileName:  suite.GatewayTCPConformanceProfile,
	suite.GatewayUDPConformanceProfileName:  suite.GatewayUDPConformanceProfile,
	suite.GatewayGRPCConformanceProfileName: suite.GatewayGRPCConformanceProfile,
	suite.MeshHTTPConformanceProfileName:    suite.MeshHTTPConformanceProfile,
	suite.MeshGRPCConformanceProfileName:    suite.MeshGRPCConformanceProfile,
}

// belongsTo reports whether a test is part of a profile (all its features
// are core or extended features of it) and whether it counts as extended;
// the same rule the upstream report applies.
func belongsTo(p suite.ConformanceProfile, rec TestRecord) (member, extended bool) {
	for _, f := range rec.Features {
		if !p.CoreFeatures.Has(f) && !p.ExtendedFeatures.Has(f) {
			return false, false
		}
		if p.ExtendedFeatures.Has(f) {
			extended = true
		}
	}
	return true, extended
}

// ProfileTally is the per-profile view of a run.
type ProfileTally struct {
	Name       suite.ConformanceProfileName
	Core       Counts
	Extended   Counts
	PerFeature map[features.FeatureName]Counts
	Failed     []TestRecord
}

func TallyProfile(p suite.ConformanceProfile, records []TestRecord) ProfileTally {
	tally := ProfileTally{Name: p.Name, Core: Counts{}, Extended: Counts{}, PerFeature: map[features.FeatureName]Counts{}}
	for _, rec := range records {
		member, extended := belongsTo(p, rec)
		if !member {
			continue
		}
		if extended {
			tally.Extended[rec.Outcome]++
		} else {
			tally.Core[rec.Outcome]++
		}
		for _, f := range rec.Features {
			if tally.PerFeature[f] == nil {
				tally.PerFeature[f] = Counts{}
			}
			tally.PerFeature[f][rec.Outcome]++
		}
		if rec.Outcome == Failed {
			tally.Failed = append(tally.Failed, rec)
		}
	}
	return tally
}

// diffFeatures returns the names only in want (missing) and only in got (extra).
func diffFeatures(want, got []string) (missing, extra []string) {
	for _, w := range want {
		if !slices.Contains(got, w) {
			missing = append(missing, w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			extra = append(extra, g)
		}
	}
	return missing, extra
}

// Expected lists the upstream tests a run must pass: every test of the
// selected profiles whose features are all supported in this run.
func Expected(all []suite.ConformanceTest, profiles []suite.ConformanceProfileName, supported []features.FeatureName) []string {
	var out []string
	for _, test := range all {
		rec := TestRecord{Name: test.ShortName, Features: test.Features}
		inProfile := false
		for _, name := range profiles {
			if p, ok := knownProfiles[name]; ok {
				if member, _ := belongsTo(p, rec); member {
					inProfile = true
				}
			}
		}
		allSupported := true
		for _, f := range test.Features {
			if !slices.Contains(supported, f) {
				allSupported = false
			}
		}
		if inProfile && allSupported && !slices.Contains(out, test.ShortName) {
			out = append(out, test.ShortName)
		}
	}
	slices.Sort(out)
	return out
}

// NotPassed returns the expected tests that did not pass (failed, skipped
// or never ran): a run that leaves any of them fails, whatever go test's
// exit status says.
func NotPassed(expected []string, records []TestRecord) []string {
	var out []string
	for _, name := range expected {
		passed := slices.ContainsFunc(records, func(r TestRecord) bool {
			return r.Name == name && r.Outcome == Passed
		})
		if !passed {
			out = append(out, name)
		}
	}
	return out
}
