package conformance

import (
	"strings"
	"testing"
	"time"

	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/gateway-api/pkg/features"
)

func TestSummaryCountsCoreExtendedAndFeatures(t *testing.T) {
	records := []TestRecord{
		{Name: "HTTPRouteSimpleSameNamespace", Features: []features.FeatureName{features.SupportGateway, features.SupportHTTPRoute}, Outcome: Passed},
		{Name: "HTTPRouteMethodMatching", Features: []features.FeatureName{features.SupportGateway, features.SupportHTTPRoute, features.SupportHTTPRouteMethodMatching}, Outcome: Failed},
		{Name: "HTTPRouteMirror", Features: []features.FeatureName{features.SupportGateway, features.SupportHTTPRoute, features.SupportHTTPRouteRequestMirror}, Outcome: NotSupported},
		{Name: "GRPCExactMethodMatching", Features: []features.FeatureName{features.SupportGateway, features.SupportGRPCRoute}, Outcome: NotSupported},
	}
	tally := TallyProfile(suite.GatewayHTTPConformanceProfile, records)
	if tally.Core[Passed] != 1 || tally.Core.Total() != 1 {
		t.Errorf("core counts %v", tally.Core)
	}
	if tally.Extended[Failed] != 1 || tally.Extended[NotSupported] != 1 || tally.Extended.Total() != 2 {
		t.Errorf("extended counts %v", tally.Extended)
	}
	if got := tally.PerFeature[features.SupportHTTPRoute][Passed]; got != 1 {
		t.Errorf("HTTPRoute passed %d", got)
	}
	if len(tally.Failed) != 1 || tally.Failed[0].Name != "HTTPRouteMethodMatching" {
		t.Errorf("failed %v", tally.Failed)
	}

	info := RunInfo{
		Profiles: []suite.ConformanceProfileName{suite.GatewayHTTPConformanceProfileName},
		Mode:     "full",
		Version:  "v0.1.0",
		Claimed:  []string{"Gateway", "HTTPRoute", "HTTPRouteMethodMatching"},
		Duration: 90 * time.Second,
		Report: &confv1.ConformanceReport{
			GatewayAPIVersion: "v1.6.3",
			GatewayAPIChannel: "experimental",
			ProfileReports: []confv1.ProfileReport{{
				Name: "GATEWAY-HTTP",
				Core: confv1.Status{Result: confv1.Success, Statistics: confv1.Statistics{Passed: 1}},
			}},
		},
		ReportRef: "report.yaml",
	}
	md := RenderSummary(info, records)
	for _, want := range []string{
		"# Gateway API conformance: GATEWAY-HTTP",
		"| core | 1 | 0 | 0 | 0 |",
		"| extended | 0 | 1 | 0 | 1 |",
		"- HTTPRouteMethodMatching (Gateway, HTTPRoute, HTTPRouteMethodMatching)",
		"| HTTPRouteMethodMatching | yes | 0 | 1 | 0 | 0 |",
		"| HTTPRouteRequestMirror | no | 0 | 0 | 0 | 1 |",
		"Upstream report: core success (1 passed",
		"run time 1m30s",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("summary lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "| GRPCRoute |") {
		t.Errorf("a GRPC test leaked into the HTTP profile:\n%s", md)
	}
}
