package main

import (
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func TestAnswersWithTheClientAddress(t *testing.T) {
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	server := &dns.Server{PacketConn: conn, Handler: dns.HandlerFunc(answer), NotifyStartedFunc: func() { close(started) }}
	go func() { _ = server.ActivateAndServe() }()
	defer func() { _ = server.Shutdown() }()
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("server did not start")
	}

	query := new(dns.Msg)
	query.SetQuestion("foo.bar.com.", dns.TypeA)
	reply, err := dns.Exchange(query, conn.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	if reply.Rcode != dns.RcodeSuccess || len(reply.Extra) != 1 {
		t.Fatalf("unexpected reply: %v", reply)
	}
	a, ok := reply.Extra[0].(*dns.A)
	if !ok || !a.A.Equal(net.IPv4(127, 0, 0, 1)) {
		t.Fatalf("expected the client's address, got %v", reply.Extra[0])
	}
}
