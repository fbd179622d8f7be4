// Command dns-stand-in replaces the coredns image of the conformance base
// manifests when pods run as local processes (tools/fakelet). It answers every
// query itself, the way coredns's whoami plugin does (an A or AAAA record
// holding the client's address), and never forwards anywhere: the Corefile
// the suite ships forwards to public resolvers, which a local run must not
// reach. The suite only checks that an answer comes back through a UDPRoute.
package main

import (
	"flag"
	"log"
	"net"

	"github.com/miekg/dns"
)

func main() {
	// coredns's flag; the Corefile is deliberately not read (see above).
	flag.String("conf", "", "ignored: accepted for command-line compatibility with coredns")
	listen := flag.String("listen", ":53", "UDP and TCP address to answer on")
	flag.Parse()

	dns.HandleFunc(".", answer)
	errs := make(chan error, 2)
	for _, network := range []string{"udp", "tcp"} {
		server := &dns.Server{Addr: *listen, Net: network}
		go func() { errs <- server.ListenAndServe() }()
	}
	log.Printf("dns-stand-in answering on %s (udp, tcp)", *listen)
	log.Fatal(<-errs)
}

func answer(w dns.ResponseWriter, query *dns.Msg) {
	reply := new(dns.Msg)
	reply.SetReply(query)
	reply.Authoritative = true
	client := clientIP(w.RemoteAddr())
	for _, q := range query.Question {
		header := dns.RR_Header{Name: q.Name, Class: dns.ClassINET, Ttl: 0}
		if v4 := client.To4(); v4 != nil {
			header.Rrtype = dns.TypeA
			reply.Extra = append(reply.Extra, &dns.A{Hdr: header, A: v4})
		} else if client != nil {
			header.Rrtype = dns.TypeAAAA
			reply.Extra = append(reply.Extra, &dns.AAAA{Hdr: header, AAAA: client})
		}
	}
	if err := w.WriteMsg(reply); err != nil {
		log.Printf("reply to %s: %v", w.RemoteAddr(), err)
	}
}

func clientIP(addr net.Addr) net.IP {
	switch a := addr.(type) {
	case *net.UDPAddr:
		return a.IP
	case *net.TCPAddr:
		return a.IP
	}
	return nil
}
