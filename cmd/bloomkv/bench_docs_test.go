package main

import (
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// headlineSection is the README section whose table quotes the generated
// result pages.
const headlineSection = "## Results against Pebble"

// TestReadme_HeadlineFigures checks that every figure of the README's
// headline table appears in the generated page its row links to
// (docs/results.md from bench --markdown, docs/ycsb.md from run.sh
// --markdown), so the README cannot drift from the runs it quotes. It
// fails when the table quotes no figure at all.
func TestReadme_HeadlineFigures(t *testing.T) {
	readme := readRepoFile(t, "README.md")
	rows := headlineRows(t, readme)
	link := regexp.MustCompile(`\]\((docs/[a-z-]+\.md)\)`)
	number := regexp.MustCompile(`\d+(?:\.\d+)?`)
	checked := 0
	for _, row := range rows {
		m := link.FindStringSubmatch(row)
		if m == nil {
			t.Errorf("headline row links to no generated page: %s", row)
			continue
		}
		page := readRepoFile(t, m[1])
		cells := strings.Split(strings.Trim(row, "|"), "|")
		for _, cell := range cells[1 : len(cells)-1] { // not the measure's name, not the link
			for _, fig := range number.FindAllString(cell, -1) {
				checked++
				if !containsNumber(page, fig) {
					t.Errorf("README quotes %s (%q), which %s does not hold", fig, strings.TrimSpace(cell), m[1])
				}
			}
		}
	}
	if checked < len(rows) {
		t.Fatalf("checked %d figures in %d headline rows: the table quotes too few", checked, len(rows))
	}
}

// headlineRows returns the body rows of the first table under the
// headline section.
func headlineRows(t *testing.T, readme string) []string {
	_, section, ok := strings.Cut(readme, "\n"+headlineSection+"\n")
	if !ok {
		t.Fatalf("README has no %q section", headlineSection)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var rows []string
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "|") {
			rows = append(rows, line)
		}
	}
	if len(rows) < 3 {
		t.Fatalf("headline section has %d table lines, want a header, a rule and rows", len(rows))
	}
	return rows[2:]
}

// containsNumber reports whether fig occurs in page as a whole number, not
// as part of a longer one.
func containsNumber(page, fig string) bool {
	re := regexp.MustCompile(`(^|[^\d.])` + regexp.QuoteMeta(fig) + `($|[^\d]|\.[^\d])`)
	return re.MatchString(page)
}

// readRepoFile reads a file of the repository, from the root.
func readRepoFile(t *testing.T, name string) string {
	f, err := vfs.Default.Open("../../" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestReadme_ModeFigures checks that the README's table of WAL modes
// quotes, for every mode it lists, the figures of the page's write-modes
// section (bench --markdown) cell for cell: ns per NoSync and Sync Set
// and their ratios to Pebble. It fails when the README lists fewer than
// two modes, or a mode the page lacks.
func TestReadme_ModeFigures(t *testing.T) {
	readme := modeRows(t, "README.md", "\n## Guarantees\n")
	page := modeRows(t, "docs/results.md", "\n"+writeModesTitle+"\n")
	checked := 0
	for mode, cells := range readme {
		want, ok := page[mode]
		if !ok {
			t.Errorf("README lists mode %q, which docs/results.md does not", mode)
			continue
		}
		for i := 2; i < len(cells) && i < len(want); i++ {
			checked++
			if cells[i] != want[i] {
				t.Errorf("README: %s, column %d: %q; docs/results.md has %q", mode, i+1, cells[i], want[i])
			}
		}
	}
	if len(readme) < 2 || checked < 4*len(readme) {
		t.Fatalf("checked %d figures of %d modes: the README's modes table quotes too few", checked, len(readme))
	}
}

// modeRows returns the rows of the first table under heading in the
// repository file name whose header begins with "mode": the cells of
// each, trimmed and without backquotes, by mode.
func modeRows(t *testing.T, name, heading string) map[string][]string {
	_, section, ok := strings.Cut(readRepoFile(t, name), heading)
	if !ok {
		t.Fatalf("%s has no %q section", name, strings.TrimSpace(heading))
	}
	section, _, _ = strings.Cut(section, "\n## ")
	rows := map[string][]string{}
	inTable := false
	for _, line := range strings.Split(section, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i, c := range cells {
			cells[i] = strings.TrimSpace(strings.ReplaceAll(c, "`", ""))
		}
		switch {
		case !inTable && cells[0] == "mode":
			inTable = true
		case inTable && !strings.HasPrefix(cells[0], "---"):
			rows[cells[0]] = cells
		}
	}
	if len(rows) == 0 {
		t.Fatalf("%s has no table of modes under %q", name, strings.TrimSpace(heading))
	}
	return rows
}

func TestContainsNumber(t *testing.T) {
	page := "ratio 0.45x, fpr 0.97%, 1625 ns, 10.13 bits."
	for fig, want := range map[string]bool{"0.45": true, "0.97": true, "1625": true, "10.13": true,
		"0.4": false, "162": false, "10.1": false, "13": false} {
		if got := containsNumber(page, fig); got != want {
			t.Errorf("containsNumber(%q) = %v, want %v", fig, got, want)
		}
	}
}

// TestReadme_EmbeddingExample checks that the README's embedding example
// is kv's ExampleOpen as go test runs it, so the first code a newcomer
// copies compiles and does what it says.
func TestReadme_EmbeddingExample(t *testing.T) {
	src := readRepoFile(t, "kv/example_test.go")
	start := strings.Index(src, "func ExampleOpen() {")
	if start < 0 {
		t.Fatal("kv/example_test.go has no ExampleOpen")
	}
	end := strings.Index(src[start:], "\n}\n")
	if end < 0 {
		t.Fatal("ExampleOpen does not end")
	}
	example := src[start : start+end+2]
	if !strings.Contains(readRepoFile(t, "README.md"), example) {
		t.Errorf("README's embedding example is not kv's ExampleOpen:\n%s", example)
	}
}

// TestReadme_BenchExcerpt checks that every figure of the README's
// excerpt of the bench's table (the code block that starts with its
// "config" header) appears in docs/results.md, the page of the run it
// quotes. It fails when the excerpt holds no figure.
func TestReadme_BenchExcerpt(t *testing.T) {
	readme := readRepoFile(t, "README.md")
	_, block, ok := strings.Cut(readme, "```\nconfig ")
	if !ok {
		t.Fatal("README has no code block starting with the bench table's config header")
	}
	block, _, _ = strings.Cut(block, "```")
	page := readRepoFile(t, "docs/results.md")
	number := regexp.MustCompile(`\d+(?:\.\d+)?`)
	checked := 0
	for _, line := range strings.Split(block, "\n")[2:] { // not the header, not the rule
		for _, fig := range number.FindAllString(line, -1) {
			checked++
			if !containsNumber(page, fig) {
				t.Errorf("README's bench excerpt quotes %s (%q), which docs/results.md does not hold", fig, strings.TrimSpace(line))
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked %d figures in the bench excerpt: it quotes too few", checked)
	}
}

// TestDoc_ListsEveryCommandAndFlag checks that doc.go's usage has a line
// for every command the tool runs ("//\tbloomkv db get ...") and names
// every flag each takes, so the package documentation cannot fall behind
// the commands. It fails when it checked no command.
func TestDoc_ListsEveryCommandAndFlag(t *testing.T) {
	doc := readRepoFile(t, "cmd/bloomkv/doc.go")
	checked := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.HasSubCommands() {
			return
		}
		checked++
		path := c.CommandPath()
		if !strings.Contains(doc, "//\t"+path+" ") && !strings.Contains(doc, "//\t"+path+"\n") {
			t.Errorf("doc.go's usage has no line for %s", path)
		}
		check := func(f *pflag.Flag) {
			if f.Name != "help" && !strings.Contains(doc, "--"+f.Name) {
				t.Errorf("doc.go does not name %s's flag --%s", path, f.Name)
			}
		}
		c.Flags().VisitAll(check)
		c.InheritedFlags().VisitAll(check)
	}
	walk((&app{}).rootCommand())
	if checked < 10 {
		t.Fatalf("checked %d commands, want every command of the tool", checked)
	}
}
