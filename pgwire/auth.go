package pgwire

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"hash"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/xdg-go/scram"

	"tsdb/internal/auth"
)

var errAuthFailed = errors.New("password authentication failed")

// authenticate runs SCRAM-SHA-256 with the client for user. Unknown users
// go through the same exchange with a random verifier, so that a client
// cannot tell them from wrong passwords.
func (c *conn) authenticate(user string) error {
	creds, known := c.srv.opts.Auth.Lookup(user)
	if !known {
		creds, _ = auth.Verifier(user, randomString())
	}
	server, err := scram.SHA256.NewServer(func(string) (scram.StoredCredentials, error) { return creds, nil })
	if err != nil {
		return err
	}
	// Over TLS the client may bind the exchange to the server's
	// certificate (SCRAM-SHA-256-PLUS, libpq's channel_binding=require):
	// a man in the middle holding another certificate cannot relay it.
	conv := server.NewConversation()
	mechanisms := []string{"SCRAM-SHA-256"}
	if cb, ok := c.srv.channelBinding(); ok && c.tls {
		conv = server.NewConversationWithChannelBinding(cb)
		mechanisms = []string{"SCRAM-SHA-256-PLUS", "SCRAM-SHA-256"}
	}
	c.be.Send(&pgproto3.AuthenticationSASL{AuthMechanisms: mechanisms})
	if err := c.be.Flush(); err != nil {
		return err
	}
	if err := c.be.SetAuthType(pgproto3.AuthTypeSASL); err != nil {
		return err
	}
	msg, err := c.be.Receive()
	if err != nil {
		return err
	}
	init, ok := msg.(*pgproto3.SASLInitialResponse)
	if !ok || !slices.Contains(mechanisms, init.AuthMechanism) {
		return fmt.Errorf("%w: expected a SCRAM-SHA-256 initial response", errAuthFailed)
	}
	// The mechanism and the GS2 header must agree: PLUS with p=…,
	// the plain one without (the conversation checks the binding).
	if plus := init.AuthMechanism == "SCRAM-SHA-256-PLUS"; plus != strings.HasPrefix(string(init.Data), "p=") {
		return fmt.Errorf("%w: mechanism %s with channel binding flag %.1q", errAuthFailed, init.AuthMechanism, init.Data)
	}
	resp, err := conv.Step(string(init.Data))
	if err != nil {
		return fmt.Errorf("%w: %v", errAuthFailed, err)
	}
	c.be.Send(&pgproto3.AuthenticationSASLContinue{Data: []byte(resp)})
	if err := c.be.Flush(); err != nil {
		return err
	}
	if err := c.be.SetAuthType(pgproto3.AuthTypeSASLContinue); err != nil {
		return err
	}
	msg, err = c.be.Receive()
	if err != nil {
		return err
	}
	final, ok := msg.(*pgproto3.SASLResponse)
	if !ok {
		return fmt.Errorf("%w: expected a SCRAM response", errAuthFailed)
	}
	resp, err = conv.Step(string(final.Data))
	if err != nil || !conv.Valid() || !ok {
		return fmt.Errorf("%w for user %q", errAuthFailed, user)
	}
	if !known {
		return fmt.Errorf("%w for user %q", errAuthFailed, user)
	}
	c.be.Send(&pgproto3.AuthenticationSASLFinal{Data: []byte(resp)})
	return nil
}

// channelBinding is the tls-server-end-point binding of the server's
// certificate (RFC 5929: its hash by the certificate's signature hash,
// SHA-256 for MD5 and SHA-1), computed once; false without TLS or for a
// certificate whose signature names no hash (Ed25519).
func (s *Server) channelBinding() (scram.ChannelBinding, bool) {
	s.cbOnce.Do(func() {
		if s.opts.TLS == nil || len(s.opts.TLS.Certificates) == 0 || len(s.opts.TLS.Certificates[0].Certificate) == 0 {
			return
		}
		der := s.opts.TLS.Certificates[0].Certificate[0]
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			return
		}
		var h hash.Hash
		switch cert.SignatureAlgorithm {
		case x509.MD5WithRSA, x509.SHA1WithRSA, x509.DSAWithSHA1, x509.ECDSAWithSHA1,
			x509.SHA256WithRSA, x509.SHA256WithRSAPSS, x509.ECDSAWithSHA256:
			h = sha256.New()
		case x509.SHA384WithRSA, x509.SHA384WithRSAPSS, x509.ECDSAWithSHA384:
			h = sha512.New384()
		case x509.SHA512WithRSA, x509.SHA512WithRSAPSS, x509.ECDSAWithSHA512:
			h = sha512.New()
		default:
			return
		}
		h.Write(der)
		s.cb = scram.ChannelBinding{Type: scram.ChannelBindingTLSServerEndpoint, Data: h.Sum(nil)}
	})
	return s.cb, s.cb.Data != nil
}

func randomString() string {
	b := make([]byte, 24)
	rand.Read(b)
	return fmt.Sprintf("%x", b)
}

// upgradeTLS answers an SSLRequest: 'S' and a TLS handshake when TLS is
// configured, 'N' otherwise.
func (c *conn) upgradeTLS() error {
	answer := byte('N')
	if c.srv.opts.TLS != nil {
		answer = 'S'
	}
	if _, err := c.nc.Write([]byte{answer}); err != nil {
		return err
	}
	if err := c.nothingSentAhead("SSL request"); err != nil || answer == 'N' {
		return err
	}
	tc := tls.Server(c.nc, c.srv.opts.TLS)
	tc.SetDeadline(time.Now().Add(c.srv.opts.StartupTimeout))
	if err := tc.Handshake(); err != nil {
		return fmt.Errorf("TLS handshake: %w", err)
	}
	c.nc = tc
	c.tls = true
	c.be, c.rd = newBackend(tc, c.srv.opts.MaxMessageSize)
	return nil
}

// IsLoopback reports whether a listen address only accepts local clients.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
