// Command server is the gRPC interop TestService (grpc.testing) with server
// reflection, for Coxswain's end-to-end tests: the interop client drives
// the test cases, grpcurl discovers the service through reflection (a
// bidirectional stream) and calls it. Plain h2c, or TLS with -use_tls.
package main

import (
	"flag"
	"log"
	"net"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/interop"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/reflection"
)

func main() {
	port := flag.Int("port", 10000, "port to listen on (all addresses)")
	useTLS := flag.Bool("use_tls", false, "serve TLS with -tls_cert_file and -tls_key_file")
	certFile := flag.String("tls_cert_file", "", "PEM certificate chain for -use_tls")
	keyFile := flag.String("tls_key_file", "", "PEM private key for -use_tls")
	flag.Parse()

	var opts []grpc.ServerOption
	if *useTLS {
		creds, err := credentials.NewServerTLSFromFile(*certFile, *keyFile)
		if err != nil {
			log.Fatalf("TLS credentials: %v", err)
		}
		opts = append(opts, grpc.Creds(creds))
	}
	lis, err := net.Listen("tcp", ":"+strconv.Itoa(*port))
	if err != nil {
		log.Fatalf("listen: %v", err)
	}
	server := grpc.NewServer(opts...)
	testgrpc.RegisterTestServiceServer(server, interop.NewTestServer(interop.NewTestServerOptions{}))
	reflection.Register(server)
	if err := server.Serve(lis); err != nil {
		log.Fatalf("serve: %v", err)
	}
}
