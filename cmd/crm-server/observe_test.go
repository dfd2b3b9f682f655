package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crmservice/crm/db/dbtest"
)

func TestServeObserveConfiguration(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1") // never reached
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"METRICS_ADDR", map[string]string{"METRICS_ADDR": "nowhere"}, nil, `METRICS_ADDR "nowhere" is not "off", "main" or host:port, such as 127.0.0.1:9464`},
		{"--metrics-addr", nil, []string{"--metrics-addr", ":99999"}, `METRICS_ADDR ":99999": the port is not a number from 0 to 65535`},
		{"CORS_ALLOWED_ORIGINS", map[string]string{"CORS_ALLOWED_ORIGINS": "https://ok.example, app.example.com"}, nil,
			`CORS_ALLOWED_ORIGINS: "app.example.com" is not an origin such as https://app.example.com or http://localhost:3000`},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, nil,
			`OTEL_EXPORTER_OTLP_ENDPOINT "collector:4318" is not an http or https URL, such as http://localhost:4318`},
		{"OTEL_EXPORTER_OTLP_PROTOCOL", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, nil,
			`OTEL_EXPORTER_OTLP_PROTOCOL "grpc": this server exports traces over http/protobuf only (a collector's port 4318)`},
		{"OTEL_TRACES_EXPORTER", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, nil, `OTEL_TRACES_EXPORTER "zipkin": this server exports traces with otlp (or none)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			s := startServe(t, tc.args...)
			err := <-s.done
			s.done <- err
			if err == nil || err.Error() != tc.want {
				t.Errorf("error %v, want %q", err, tc.want)
			}
			if s.out.String() != "" || s.log.String() != "" {
				t.Errorf("printed before failing:\n%s\nlog:\n%s", s.out.String(), s.log.String())
			}
		})
	}

	t.Run("a taken metrics port is found before anything is printed", func(t *testing.T) {
		taken, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer taken.Close()
		addr := taken.Addr().String()
		s := startServe(t, "--addr", "127.0.0.1:0", "--metrics-addr", addr, "--demo")
		err = <-s.done
		s.done <- err
		want := "cannot listen on " + addr + " for the metrics: the port is taken by another program (choose another with METRICS_ADDR or --metrics-addr)"
		if err == nil || err.Error() != want {
			t.Errorf("error %v, want %q", err, want)
		}
		if s.out.String() != "" || s.log.String() != "" {
			t.Errorf("printed before failing:\n%s\nlog:\n%s", s.out.String(), s.log.String())
		}
	})

	t.Run("tracing off: none of the variables, or switched off", func(t *testing.T) {
		for _, env := range []map[string]string{
			{},
			{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"},
			{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"},
		} {
			if cfg, err := tracingFromEnv(func(k string) string { return env[k] }); cfg != nil || err != nil {
				t.Errorf("%v: %+v %v", env, cfg, err)
			}
		}
		env := map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://c.example/v1/traces", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}
		if cfg, err := tracingFromEnv(func(k string) string { return env[k] }); cfg == nil || err != nil || cfg.endpoint != "https://c.example/v1/traces" {
			t.Errorf("traces endpoint: %+v %v", cfg, err)
		}
	})
}

// collector is an OTLP/HTTP receiver that remembers what it was sent.
type collector struct {
	mu       sync.Mutex
	requests []string // "METHOD path content-type"
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	if len(body) > 0 {
		c.requests = append(c.requests, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
	}
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
}

func (c *collector) received() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.requests...)
}

func TestServeObservability(t *testing.T) {
	t.Setenv("DATABASE_URL", dbtest.NewURL(t))
	t.Setenv("CRM_MAIL", "off")
	col := &collector{}
	otlp := httptest.NewServer(col)
	defer otlp.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.URL)
	t.Setenv("CORS_ALLOWED_ORIGINS", "https://app.example.com")

	s := startServe(t, "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0")
	s.wait(t, "serving")
	addr := regexp.MustCompile(`msg=serving addr=(\S+)`).FindStringSubmatch(s.log.String())[1]
	metricsAddr := regexp.MustCompile(`msg="serving metrics" addr=(\S+)`).FindStringSubmatch(s.log.String())
	if metricsAddr == nil || !strings.Contains(s.log.String(), `msg="exporting traces over OTLP" endpoint=`+otlp.URL) {
		t.Fatalf("log:\n%s", s.log.String())
	}

	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/healthz", nil)
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	req.Header.Set("Origin", "https://app.example.com")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" || resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("reply headers %v", resp.Header)
	}

	// The metrics are on their own port, not on the API's.
	resp, err = http.Get("http://" + metricsAddr[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `crm_http_requests_total{code="none",operation="healthz",status="200"} 1`) ||
		!strings.Contains(string(body), `go_sql_open_connections{db_name="main"}`) {
		t.Errorf("GET /metrics of the metrics port: %d\n%s", resp.StatusCode, body)
	}
	resp, err = http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	var env struct{ Code string }
	_ = json.NewDecoder(resp.Body).Decode(&env)
	resp.Body.Close()
	if env.Code != "404" {
		t.Errorf("GET /metrics of the API's port: code %q, want the 404 envelope", env.Code)
	}

	// Stopping flushes the spans to the collector.
	s.cancel()
	if err := <-s.done; err != nil {
		t.Fatal(err)
	}
	s.done <- nil
	deadline := time.Now().Add(5 * time.Second)
	for len(col.received()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := col.received(); len(got) == 0 || got[0] != "POST /v1/traces application/x-protobuf" {
		t.Errorf("the collector received %q", got)
	}
	if strings.Contains(s.log.String(), "level=WARN") || strings.Contains(s.log.String(), "level=ERROR") {
		t.Errorf("log:\n%s", s.log.String())
	}
}

func TestServeMetricsOnMainPort(t *testing.T) {
	t.Setenv("DATABASE_URL", dbtest.NewURL(t))
	t.Setenv("CRM_MAIL", "off")
	t.Setenv("METRICS_ADDR", "main")
	s := startServe(t, "--addr", "127.0.0.1:0")
	s.wait(t, "serving")
	addr := regexp.MustCompile(`msg=serving addr=(\S+)`).FindStringSubmatch(s.log.String())[1]
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "# TYPE crm_http_request_duration_seconds histogram") {
		t.Errorf("%d\n%s", resp.StatusCode, body)
	}
	if strings.Contains(s.log.String(), "serving metrics") {
		t.Error("a metrics listener of its own was started")
	}
}
