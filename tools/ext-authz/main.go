// Command ext-authz is the external authorization service the
// CoxswainExternalAuth tests ask: an HTTP forward-auth endpoint and the
// Envoy envoy.service.auth.v3.Authorization/Check gRPC service, from
// go-control-plane's generated code (an implementation of the protocol
// independent of the proxy's own encoding).
//
// Both decide by the request's x-test-auth header:
//
//	allow     allowed; x-auth-user (x-test-user or "alice") and what the
//	          service saw (x-auth-method, x-auth-host, x-auth-path,
//	          x-auth-body) returned for the proxy to copy
//	unauth    401 with WWW-Authenticate (gRPC: UNAUTHENTICATED)
//	redirect  302 to /login (HTTP only)
//	slow      waits 2s, then allows
//	anything  else 403 with x-deny-reason (gRPC: PERMISSION_DENIED)
//
// Listens on -http and -grpc (port 0: any) and prints "http <addr>" and
// "grpc <addr>" once both are listening.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	auth "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/genproto/googleapis/rpc/code"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
)

const slow = 2 * time.Second

func main() {
	httpAddr := flag.String("http", "127.0.0.1:0", "forward-auth listen address")
	grpcAddr := flag.String("grpc", "127.0.0.1:0", "gRPC Check listen address")
	flag.Parse()

	hl, err := net.Listen("tcp", *httpAddr)
	if err != nil {
		log.Fatal(err)
	}
	gl, err := net.Listen("tcp", *grpcAddr)
	if err != nil {
		log.Fatal(err)
	}
	server := grpc.NewServer()
	auth.RegisterAuthorizationServer(server, checker{})
	go func() { log.Fatal(server.Serve(gl)) }()
	go func() { log.Fatal(http.Serve(hl, http.HandlerFunc(forward))) }()
	fmt.Printf("http %s\ngrpc %s\n", hl.Addr(), gl.Addr())
	os.Stdout.Sync()
	select {}
}

func user(h string) string {
	if h == "" {
		return "alice"
	}
	return h
}

func forward(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	switch r.Header.Get("x-test-auth") {
	case "slow":
		time.Sleep(slow)
		fallthrough
	case "allow":
		w.Header().Set("x-auth-user", user(r.Header.Get("x-test-user")))
		w.Header().Set("x-auth-method", r.Method)
		w.Header().Set("x-auth-host", r.Host)
		w.Header().Set("x-auth-path", r.URL.RequestURI())
		w.Header().Set("x-auth-body", string(body))
		w.Header().Set("x-auth-cookie", r.Header.Get("cookie"))
		w.WriteHeader(http.StatusOK)
	case "unauth":
		w.Header().Set("WWW-Authenticate", `Bearer realm="test"`)
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, "log in first\n")
	case "redirect":
		w.Header().Set("Location", "/login")
		w.WriteHeader(http.StatusFound)
	default:
		w.Header().Set("x-deny-reason", "test")
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, "denied by ext-authz\n")
	}
}

type checker struct {
	auth.UnimplementedAuthorizationServer
}

func header(k, v string) *core.HeaderValueOption {
	return &core.HeaderValueOption{Header: &core.HeaderValue{Key: k, Value: v}}
}

func (checker) Check(ctx context.Context, req *auth.CheckRequest) (*auth.CheckResponse, error) {
	h := req.GetAttributes().GetRequest().GetHttp()
	headers := h.GetHeaders()
	decision := headers["x-test-auth"]
	if decision == "slow" {
		select {
		case <-time.After(slow):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		decision = "allow"
	}
	switch decision {
	case "allow":
		return &auth.CheckResponse{
			Status: &rpcstatus.Status{Code: int32(code.Code_OK)},
			HttpResponse: &auth.CheckResponse_OkResponse{OkResponse: &auth.OkHttpResponse{
				Headers: []*core.HeaderValueOption{
					header("x-auth-user", user(headers["x-test-user"])),
					header("x-auth-method", h.GetMethod()),
					header("x-auth-host", h.GetHost()),
					header("x-auth-path", h.GetPath()),
					header("x-auth-body", h.GetBody()),
					header("x-auth-cookie", headers["cookie"]),
					header("x-auth-source", req.GetAttributes().GetSource().GetAddress().GetSocketAddress().GetAddress()),
				},
			}},
		}, nil
	case "unauth":
		return &auth.CheckResponse{
			Status: &rpcstatus.Status{Code: int32(code.Code_UNAUTHENTICATED)},
			HttpResponse: &auth.CheckResponse_DeniedResponse{DeniedResponse: &auth.DeniedHttpResponse{
				Status:  &typev3.HttpStatus{Code: typev3.StatusCode_Unauthorized},
				Headers: []*core.HeaderValueOption{header("www-authenticate", `Bearer realm="test"`)},
				Body:    "log in first\n",
			}},
		}, nil
	case "bare-deny":
		// A denial without an HTTP response: the proxy answers 403.
		return &auth.CheckResponse{Status: &rpcstatus.Status{Code: int32(code.Code_PERMISSION_DENIED)}}, nil
	default:
		return &auth.CheckResponse{
			Status: &rpcstatus.Status{Code: int32(code.Code_PERMISSION_DENIED)},
			HttpResponse: &auth.CheckResponse_DeniedResponse{DeniedResponse: &auth.DeniedHttpResponse{
				Status:  &typev3.HttpStatus{Code: typev3.StatusCode_Forbidden},
				Headers: []*core.HeaderValueOption{header("x-deny-reason", "test")},
				Body:    "denied by ext-authz\n",
			}},
		}, nil
	}
}
