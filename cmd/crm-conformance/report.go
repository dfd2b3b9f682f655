package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/crmservice/crm/conformance"
)

// The JUnit XML report: one testsuite per case file, one testcase per case,
// in the form CI systems (Jenkins, GitLab, GitHub Actions' reporters) read.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// writeJUnit writes the report as JUnit XML.
func writeJUnit(w io.Writer, rep *conformance.Report) error {
	doc := junitSuites{Name: "crm-conformance", Time: seconds(rep.Duration.Seconds())}
	var secs []float64
	for _, res := range rep.Results {
		if len(doc.Suites) == 0 || doc.Suites[len(doc.Suites)-1].Name != res.Suite {
			doc.Suites = append(doc.Suites, junitSuite{Name: res.Suite})
			secs = append(secs, 0)
		}
		s := &doc.Suites[len(doc.Suites)-1]
		tc := junitCase{Name: res.Case, Classname: "conformance." + res.Suite, Time: seconds(res.Duration.Seconds())}
		switch res.Status() {
		case "skipped":
			tc.Skipped = &junitMessage{Message: res.SkipReason}
			s.Skipped++
			doc.Skipped++
		case "failed":
			tc.Failure = &junitMessage{Message: res.Reason(), Text: details(res)}
			s.Failures++
			doc.Failures++
		}
		s.Tests++
		doc.Tests++
		secs[len(secs)-1] += res.Duration.Seconds()
		s.Cases = append(s.Cases, tc)
	}
	for i := range doc.Suites {
		doc.Suites[i].Time = seconds(secs[i])
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func seconds(s float64) string { return fmt.Sprintf("%.3f", s) }

// details is the exchange of a failed case, as printResult prints it.
func details(res conformance.Result) string {
	var b strings.Builder
	if res.Request != "" {
		fmt.Fprintf(&b, "request: %s\n", res.Request)
		if res.RequestBody != "" {
			fmt.Fprintf(&b, "request body: %s\n", oneLine(res.RequestBody))
		}
	}
	if res.HTTPStatus != 0 {
		fmt.Fprintf(&b, "reply: HTTP %d %s\n", res.HTTPStatus, oneLine(res.Body))
	}
	for _, p := range res.Problems {
		fmt.Fprintf(&b, "- %s\n", p)
	}
	return b.String()
}

// summary is the JSON summary of a run (-json).
type summary struct {
	ExitCode    int               `json:"exit_code"`
	RunID       string            `json:"run_id"`
	BaseURLs    []string          `json:"base_urls"`
	ReadOnly    bool              `json:"read_only"`
	DurationMS  int64             `json:"duration_ms"`
	Interrupted bool              `json:"interrupted"`
	Total       int               `json:"total"`
	Passed      int               `json:"passed"`
	Failed      int               `json:"failed"`
	Skipped     int               `json:"skipped"`
	Found       []summaryFound    `json:"found"`
	Unavailable map[string]string `json:"unavailable"`
	FeaturesOff map[string]string `json:"features_off"`
	Warnings    []string          `json:"warnings"`
	Writes      []summaryWrite    `json:"writes"`
	Cases       []summaryCase     `json:"cases"`
}

type summaryFound struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Source string `json:"source"`
}

type summaryWrite struct {
	Operation string `json:"operation"`
	Case      string `json:"case"`
	ID        string `json:"id,omitempty"`
	Removed   string `json:"removed,omitempty"`
	Sample    bool   `json:"sample,omitempty"`
}

type summaryCase struct {
	Name       string   `json:"name"`
	Status     string   `json:"status"`
	Reason     string   `json:"reason,omitempty"`
	Problems   []string `json:"problems,omitempty"`
	Request    string   `json:"request,omitempty"`
	HTTPStatus int      `json:"http_status,omitempty"`
	DurationMS float64  `json:"duration_ms"`
}

// writeSummary writes the JSON summary of a run.
func writeSummary(w io.Writer, o *options, setup *conformance.Setup, rep *conformance.Report, code int) error {
	s := summary{ExitCode: code, RunID: rep.RunID, BaseURLs: o.baseURLs, ReadOnly: o.readOnly,
		DurationMS: rep.Duration.Milliseconds(), Interrupted: rep.Interrupted, Total: len(rep.Results),
		Passed: rep.Passed(), Failed: rep.Failed(), Skipped: rep.Skipped(),
		Found: []summaryFound{}, Unavailable: setup.Unavailable, FeaturesOff: setup.Off, Warnings: append([]string{}, setup.Warnings...),
		Writes: []summaryWrite{}, Cases: []summaryCase{}}
	for _, f := range setup.Found {
		s.Found = append(s.Found, summaryFound{Name: f.Name, Value: f.Value, Source: f.Source})
	}
	for _, wr := range rep.Writes {
		s.Writes = append(s.Writes, summaryWrite{Operation: wr.Operation, Case: wr.Case, ID: wr.ID, Removed: wr.Removed, Sample: wr.Sample})
	}
	for _, res := range rep.Results {
		c := summaryCase{Name: res.Name(), Status: res.Status(), Problems: res.Problems, Request: res.Request,
			HTTPStatus: res.HTTPStatus, DurationMS: float64(res.Duration.Microseconds()) / 1000}
		switch res.Status() {
		case "skipped":
			c.Reason = res.SkipReason
		case "failed":
			c.Reason = res.Reason()
		}
		s.Cases = append(s.Cases, c)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}
