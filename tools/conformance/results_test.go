package conformance

import (
	"slices"
	"testing"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/gateway-api/pkg/features"
)

func TestExpectedTestsFollowProfilesAndFeatures(t *testing.T) {
	all := []suite.ConformanceTest{
		{ShortName: "TCPOne", Features: []features.FeatureName{features.SupportGateway, features.SupportTCPRoute}},
		{ShortName: "UDPOne", Features: []features.FeatureName{features.SupportGateway, features.SupportUDPRoute}},
		{ShortName: "HTTPMirror", Features: []features.FeatureName{features.SupportGateway, features.SupportHTTPRoute, features.SupportHTTPRouteRequestMirror}},
	}
	supported := []features.FeatureName{features.SupportGateway, features.SupportTCPRoute, features.SupportUDPRoute, features.SupportHTTPRoute}
	got := Expected(all, []suite.ConformanceProfileName{suite.GatewayTCPConformanceProfileName, suite.GatewayHTTPConformanceProfileName}, supported)
	if !slices.Equal(got, []string{"TCPOne"}) {
		t.Fatalf("expected only the TCP test (UDP is another profile, mirroring unclaimed), got %v", got)
	}
	records := []TestRecord{{Name: "TCPOne", Outcome: Skipped}}
	if missing := NotPassed(got, records); !slices.Equal(missing, []string{"TCPOne"}) {
		t.Fatalf("a skipped expected test must count as not passed, got %v", missing)
	}
	records[0].Outcome = Passed
	if missing := NotPassed(got, records); len(missing) != 0 {
		t.Fatalf("got %v", missing)
	}
}
