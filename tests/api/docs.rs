//! Documentation that cannot go stale (#21). Every ` ```sh runnable ` block of README.md and
//! docs/ is run, in page order, against a fresh database of its page with the real binary as
//! `emotionbench`, and what it prints is compared with the ` ```text output ` block after it;
//! every `emotionbench …` command the docs name is checked against the real binary's `--help`
//! (subcommands and `--flags`); every page route they name must answer (not 404) on a real
//! server; docs/README.md must link every page of docs/, and every picture the docs embed must
//! be one the browser tests write. The conventions are in CONTRIBUTING.md ("Documentation").

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use emotionbench::llm::fake::{FakeAction, FakeServer};
use emotionbench::store::users::Role;

use crate::helpers::{TestDb, spawn_app, upstream};
use crate::on_both_backends;

/// The info string of a block the docs test runs.
const RUNNABLE: &str = "sh runnable";
/// The info string of a block holding lines the runnable block before it must print.
const OUTPUT: &str = "text output";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fenced block of a Markdown page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The line of its opening fence (1-based).
    pub line: usize,
    pub info: String,
    pub body: String,
    /// For a runnable block: the body of the output block that follows it (only blank lines
    /// between).
    pub expected: Option<String>,
}

/// The fenced blocks of a page, indented ones (inside a list) included.
pub fn blocks(text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<Block> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let trimmed = lines[i].trim_start();
        let Some(info) = trimmed.strip_prefix("```") else {
            i += 1;
            continue;
        };
        let indent = lines[i].len() - trimmed.len();
        let start = i;
        let mut body = Vec::new();
        i += 1;
        while i < lines.len() && lines[i].trim() != "```" {
            let l = lines[i];
            body.push(if l.len() >= indent && l[..indent].trim().is_empty() {
                &l[indent..]
            } else {
                l.trim_start()
            });
            i += 1;
        }
        i += 1;
        let block = Block {
            line: start + 1,
            info: info.trim().to_owned(),
            body: body.join("\n"),
            expected: None,
        };
        // An output block belongs to the runnable block right before it.
        let follows_runnable = out.last().is_some_and(|b| {
            b.info == RUNNABLE
                && b.expected.is_none()
                && lines[b.end_line(start)..start]
                    .iter()
                    .all(|l| l.trim().is_empty())
        });
        if block.info == OUTPUT && follows_runnable {
            if let Some(last) = out.last_mut() {
                last.expected = Some(block.body);
            }
            continue;
        }
        out.push(block);
    }
    out
}

impl Block {
    /// The index of the line after this block's closing fence (the block ends before `limit`).
    fn end_line(&self, limit: usize) -> usize {
        (self.line + self.body.lines().count() + 1).min(limit)
    }
}

/// The expected lines a command's output lacks: each non-empty line of `expected` must be a
/// line of `actual`, compared with runs of spaces collapsed.
pub fn missing_lines(expected: &str, actual: &str) -> Vec<String> {
    let squash = |l: &str| l.split_whitespace().collect::<Vec<_>>().join(" ");
    let have: BTreeSet<String> = actual.lines().map(squash).collect();
    expected
        .lines()
        .map(squash)
        .filter(|l| !l.is_empty() && !have.contains(l))
        .collect()
}

/// README.md and every Markdown page under docs/ (relative paths, sorted).
fn pages() -> Vec<String> {
    let mut out = vec!["README.md".to_owned()];
    let mut stack = vec![root().join("docs")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                let rel = path.strip_prefix(root()).unwrap();
                out.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    out
}

fn read(page: &str) -> String {
    std::fs::read_to_string(root().join(page)).unwrap()
}

/// Where runnable blocks run: a working directory with `./EmotionBench` (the upstream data),
/// `emotionbench` on PATH (the real binary), `$DATABASE_URL` and a config whose provider
/// `fake` is the fake OpenAI-compatible server.
pub struct Sandbox {
    dir: tempfile::TempDir,
    bin: tempfile::TempDir,
    config: PathBuf,
    db_url: String,
    _fake: FakeServer,
}

impl Sandbox {
    pub fn new(db: &TestDb, data: Option<&Path>) -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        let bin = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(
            env!("CARGO_BIN_EXE_emotionbench"),
            bin.path().join("emotionbench"),
        )
        .unwrap();
        if let Some(data) = data {
            std::os::unix::fs::symlink(data, dir.path().join("EmotionBench")).unwrap();
        }
        let fake =
            FakeServer::start(|req| FakeAction::answer(req, 3, std::time::Duration::ZERO)).unwrap();
        let config = bin.path().join("emotionbench.toml");
        std::fs::write(
            &config,
            format!(
                "[[providers]]\nname = \"fake\"\nkind = \"openai\"\nbase_url = \"{}\"\n",
                fake.base_url()
            ),
        )
        .unwrap();
        Sandbox {
            dir,
            bin,
            config,
            db_url: db.url.clone(),
            _fake: fake,
        }
    }

    /// Runs one block with bash (`-e -o pipefail`): its status, stdout and stderr.
    pub fn run(&self, script: &str) -> (bool, String, String) {
        let path = format!(
            "{}:{}",
            self.bin.path().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let out = Command::new("bash")
            .args(["-e", "-o", "pipefail", "-c", script])
            .current_dir(self.dir.path())
            .env("PATH", path)
            .env("DATABASE_URL", &self.db_url)
            .env("EMOTIONBENCH_CONFIG", &self.config)
            .env("EMOTIONBENCH_LOG", "warn")
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

/// Runs a page's runnable blocks in order in `sandbox`: what went wrong, one line per block.
pub fn run_page(page: &str, text: &str, sandbox: &Sandbox) -> (usize, Vec<String>) {
    let mut ran = 0;
    // An output block away from its runnable block would silently compare nothing.
    let mut failures: Vec<String> = blocks(text)
        .iter()
        .filter(|b| b.info == OUTPUT)
        .map(|b| {
            format!(
                "{page}:{}: an output block not right after a runnable block",
                b.line
            )
        })
        .collect();
    for b in blocks(text).iter().filter(|b| b.info == RUNNABLE) {
        ran += 1;
        let (ok, stdout, stderr) = sandbox.run(&b.body);
        if !ok {
            failures.push(format!(
                "{page}:{}: the block failed\n{}\nstdout:\n{stdout}\nstderr:\n{stderr}",
                b.line, b.body
            ));
            // Later blocks of the page build on this one.
            break;
        }
        if let Some(expected) = &b.expected {
            // A reader's terminal shows both (the commands report files written on stderr).
            let missing = missing_lines(expected, &format!("{stdout}\n{stderr}"));
            if !missing.is_empty() {
                failures.push(format!(
                    "{page}:{}: the page shows lines the block did not print:\n  {}\nit printed:\n{stdout}",
                    b.line,
                    missing.join("\n  ")
                ));
            }
        }
    }
    (ran, failures)
}

fn every_runnable_block_runs_and_prints_what_its_page_shows(db: TestDb) {
    let Some(data) = upstream() else { return };
    let backend = db.backend;
    drop(db);
    let (mut blocks_run, mut outputs, mut failures) = (0, 0, Vec::new());
    let pages = pages();
    for page in &pages {
        let text = read(page);
        if !text.contains(&format!("```{RUNNABLE}")) {
            continue;
        }
        // A fresh database per page: each page's blocks start from nothing.
        let Some(db) = TestDb::of(backend) else {
            return;
        };
        let sandbox = Sandbox::new(&db, Some(&data));
        let (ran, failed) = run_page(page, &text, &sandbox);
        blocks_run += ran;
        outputs += blocks(&text)
            .iter()
            .filter(|b| b.expected.is_some())
            .count();
        failures.extend(failed);
    }
    eprintln!(
        "docs: {blocks_run} runnable blocks of {} pages run on {backend:?}, {outputs} with the output their page shows",
        pages.len()
    );
    assert!(blocks_run >= 10, "only {blocks_run} runnable blocks");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

on_both_backends!(every_runnable_block_runs_and_prints_what_its_page_shows);

/// One `emotionbench …` command line the docs name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    pub line: usize,
    /// Leading words: the subcommand path (or a positional argument, which `--help` tells).
    pub words: Vec<String>,
    pub flags: Vec<String>,
    /// A flag named on its own (`--max-cost USD`): some command must have it.
    pub anywhere: bool,
}

/// Every command line of a page that runs the binary: in code blocks (continuation lines
/// joined) and in inline code; `cargo run [--release] --` counts as the binary, and so does
/// inline code that starts with one of its `commands` (`run --instrument KEY`). Inline code
/// that is a flag on its own is a mention of that flag.
pub fn mentions(text: &str, commands: &[String]) -> Vec<Mention> {
    let mut out = Vec::new();
    let mut in_block = false;
    let mut pending = String::new();
    // The first line of a command continued with `\`, or of a paragraph.
    let mut first = None;
    let lines: Vec<&str> = text.lines().chain([""]).collect();
    for (i, raw) in lines.iter().enumerate() {
        let fence = raw.trim_start().starts_with("```");
        if !in_block && !fence && !raw.trim().is_empty() {
            // Prose is read a paragraph at a time: inline code may wrap.
            pending.push_str(raw);
            pending.push(' ');
            first.get_or_insert(i);
            continue;
        }
        if in_block && !fence {
            if let Some(head) = raw.trim_end().strip_suffix('\\') {
                pending.push_str(head);
                pending.push(' ');
                first.get_or_insert(i);
                continue;
            }
            pending.push_str(raw);
        }
        let line = first.take().unwrap_or(i) + 1;
        let text = std::mem::take(&mut pending);
        if in_block {
            out.extend(commands_in(&text).into_iter().map(|c| mention(line, c)));
        } else {
            out.extend(inline_mentions(&text, commands).map(|m| Mention { line, ..m }));
        }
        if fence {
            in_block = !in_block;
        }
    }
    out
}

fn mention(line: usize, (words, flags): (Vec<String>, Vec<String>)) -> Mention {
    Mention {
        line,
        words,
        flags,
        anywhere: false,
    }
}

/// The mentions in the inline code spans of a paragraph (the odd pieces between backticks).
fn inline_mentions<'a>(
    paragraph: &'a str,
    commands: &'a [String],
) -> impl Iterator<Item = Mention> + 'a {
    paragraph
        .split('`')
        .skip(1)
        .step_by(2)
        .flat_map(move |piece| {
            if piece.starts_with("--") {
                let (_, flags) = flags_and_words(&[piece]);
                return vec![Mention {
                    line: 0,
                    words: Vec::new(),
                    flags: flags.into_iter().take(1).collect(),
                    anywhere: true,
                }];
            }
            let first = piece.split_whitespace().next().unwrap_or("");
            let piece = if commands.iter().any(|c| c == first) {
                format!("emotionbench {piece}")
            } else {
                piece.to_owned()
            };
            commands_in(&piece)
                .into_iter()
                .map(|c| mention(0, c))
                .collect()
        })
}

/// The `emotionbench` invocations in one line of shell: (words, flags) each.
fn commands_in(line: &str) -> Vec<(Vec<String>, Vec<String>)> {
    let line = line
        .replace("cargo run --release --", "emotionbench")
        .replace("cargo run --", "emotionbench");
    let tokens: Vec<&str> = line.split_whitespace().collect();
    tokens
        .iter()
        .enumerate()
        .filter(|(_, t)| t.trim_start_matches(['$', '(', '"']) == "emotionbench")
        .map(|(i, _)| flags_and_words(&tokens[i + 1..]))
        .collect()
}

/// The words (the subcommand path: at most three, before any other argument) and the long
/// flags of one command's arguments, up to a pipe, a list, a redirection or a comment.
fn flags_and_words(tokens: &[&str]) -> (Vec<String>, Vec<String>) {
    let mut words = Vec::new();
    let mut flags = Vec::new();
    let mut path_done = false;
    for tok in tokens.iter().flat_map(|t| t.split_whitespace()) {
        if ["|", "||", "&&", ";", "&", ">", "<", "2>", ">>"].contains(&tok)
            || tok.starts_with('#')
            || tok.starts_with('>')
        {
            break;
        }
        let bare = tok
            .trim_start_matches(['[', '('])
            .trim_end_matches([']', ',', '.', ';', ':', ')']);
        if let Some(flag) = bare.strip_prefix("--") {
            path_done = true;
            let name: String = flag
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            if !name.is_empty() {
                flags.push(format!("--{name}"));
            }
            continue;
        }
        let wordlike = !bare.is_empty()
            && bare.split('|').all(|w| {
                w.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                    && w.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            });
        // The first argument that is not a word ends the subcommand path.
        if wordlike && !path_done && words.len() < 3 {
            words.push(bare.to_owned());
        } else {
            path_done = true;
        }
    }
    (words, flags)
}

/// `emotionbench [path…] --help`, asked once per path.
#[derive(Default)]
pub struct Helps(HashMap<Vec<String>, Option<String>>);

impl Helps {
    fn help(&mut self, path: &[String]) -> Option<String> {
        self.0
            .entry(path.to_vec())
            .or_insert_with(|| {
                let out = Command::new(env!("CARGO_BIN_EXE_emotionbench"))
                    .args(path)
                    .arg("--help")
                    .env_remove("EMOTIONBENCH_CONFIG")
                    .output()
                    .unwrap();
                out.status
                    .success()
                    .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
            })
            .clone()
    }
}

impl Helps {
    /// Every command's help, concatenated (for a flag named on its own).
    fn everything(&mut self) -> String {
        let mut all = String::new();
        let mut todo: Vec<Vec<String>> = vec![Vec::new()];
        while let Some(path) = todo.pop() {
            let help = self.help(&path).unwrap_or_default();
            for sub in subcommands(&help).into_iter().filter(|s| s != "help") {
                let mut p = path.clone();
                p.push(sub);
                todo.push(p);
            }
            all += &help;
        }
        all
    }
}

/// The subcommands a help text lists under "Commands:".
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

fn lists_flag(help: &str, flag: &str) -> bool {
    help.match_indices(flag).any(|(i, _)| {
        let before = help[..i].chars().next_back();
        let after = help[i + flag.len()..].chars().next();
        before.is_none_or(|c| c.is_whitespace() || c == ',' || c == '[')
            && after.is_none_or(|c| c.is_whitespace() || c == '=' || c == ',' || c == ']')
    })
}

/// What is wrong with one mention: an unknown subcommand or a flag its command does not have.
pub fn check_mention(m: &Mention, helps: &mut Helps) -> Vec<String> {
    if m.anywhere {
        let all = helps.everything();
        return m
            .flags
            .iter()
            .filter(|f| !lists_flag(&all, f))
            .map(|f| format!("line {}: no command has the flag `{f}`", m.line))
            .collect();
    }
    let mut leaves: Vec<Vec<String>> = vec![Vec::new()];
    let mut problems = Vec::new();
    for word in &m.words {
        let mut next = Vec::new();
        for path in &leaves {
            let subs = subcommands(&helps.help(path).unwrap_or_default());
            if subs.is_empty() {
                // A positional argument: the path ends here.
                next.push(path.clone());
                continue;
            }
            for alt in word.split('|') {
                if subs.iter().any(|s| s == alt) {
                    let mut p = path.clone();
                    p.push(alt.to_owned());
                    next.push(p);
                } else {
                    problems.push(format!(
                        "line {}: `emotionbench {}` has no command `{alt}` (it has: {})",
                        m.line,
                        path.join(" "),
                        subs.join(", ")
                    ));
                }
            }
        }
        next.dedup();
        leaves = next;
    }
    if leaves.is_empty() {
        return problems;
    }
    for flag in &m.flags {
        let known = leaves
            .iter()
            .any(|p| helps.help(p).is_some_and(|h| lists_flag(&h, flag)));
        if !known {
            let names: Vec<String> = leaves.iter().map(|p| p.join(" ")).collect();
            problems.push(format!(
                "line {}: `emotionbench {}` has no flag `{flag}`",
                m.line,
                names.join("|")
            ));
        }
    }
    problems
}

/// Every problem of a page's command lines.
pub fn check_commands(page: &str, text: &str, helps: &mut Helps) -> (usize, Vec<String>) {
    let top = subcommands(&helps.help(&[]).unwrap_or_default());
    let found = mentions(text, &top);
    let problems = found
        .iter()
        .flat_map(|m| check_mention(m, helps))
        .map(|p| format!("{page}: {p}"))
        .collect();
    (found.len(), problems)
}

#[test]
fn every_command_and_flag_the_docs_name_exists_in_the_binary() {
    let mut helps = Helps::default();
    let (mut count, mut problems) = (0, Vec::new());
    for page in pages() {
        let (n, p) = check_commands(&page, &read(&page), &mut helps);
        count += n;
        problems.extend(p);
    }
    eprintln!("docs: {count} command lines checked against --help");
    assert!(count >= 50, "only {count} command lines found");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The checker is not a test that cannot fail: a renamed flag, an unknown subcommand, a
/// failing block and a block that prints other figures than its page are each caught.
#[test]
fn the_checker_fails_on_a_renamed_flag_a_broken_command_and_other_figures() {
    let mut helps = Helps::default();
    let good = "```sh\nemotionbench export long --study crowd -o long.csv\n```\n\
                and `emotionbench runs pause|resume|cancel ID`, `emotionbench report --study s \\`\n";
    assert_eq!(
        check_commands("good.md", good, &mut helps).1,
        Vec::<String>::new()
    );
    let renamed = "```sh\nemotionbench export long --stdy crowd \\\n    --status all\n```\n";
    let (_, p) = check_commands("renamed.md", renamed, &mut helps);
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(p[0].contains("--stdy") && p[0].contains("line 2"), "{p:?}");
    let unknown = "Use `emotionbench runs pause|stop ID` or `cargo run -- demo --bnd 0.0.0.0:80`.";
    let (_, p) = check_commands("unknown.md", unknown, &mut helps);
    assert_eq!(p.len(), 2, "{p:?}");
    assert!(p[0].contains("no command `stop`"), "{p:?}");
    assert!(p[1].contains("--bnd"), "{p:?}");
    // Inline code without the binary's name: a command of it, or a flag on its own.
    let inline = "Raise it with `runs resume ID --max-cost USD` or `--max-cost`; not `--max-costs` \
                  nor `run --instrumen KEY`.";
    let (n, p) = check_commands("inline.md", inline, &mut helps);
    assert_eq!(n, 4, "{p:?}");
    assert_eq!(p.len(), 2, "{p:?}");
    assert!(
        p[0].contains("no command has the flag `--max-costs`"),
        "{p:?}"
    );
    assert!(
        p[1].contains("`emotionbench run` has no flag `--instrumen`"),
        "{p:?}"
    );

    let db = TestDb::sqlite();
    let sandbox = Sandbox::new(&db, None);
    let page = "```sh runnable\nemotionbench migrate > /dev/null\nemotionbench instruments list\n```\n\n\
                ```text output\nPANAS    20  1-5  builtin  Positive Affect; Negative Affect\n```\n";
    let shown = blocks(page);
    assert_eq!(shown.len(), 1);
    assert!(
        shown[0]
            .expected
            .as_deref()
            .is_some_and(|e| e.starts_with("PANAS"))
    );
    let printed = sandbox.run(&shown[0].body).1;
    let (ran, failures) = run_page("page.md", page, &sandbox);
    assert_eq!((ran, failures), (1, Vec::<String>::new()), "{printed}");
    let broken = page.replace("instruments list", "instruments lst");
    let (_, failures) = run_page("broken.md", &broken, &sandbox);
    assert!(
        failures.len() == 1 && failures[0].contains("the block failed"),
        "{failures:?}"
    );
    let other = page.replace("PANAS    20", "PANAS    21");
    let (_, failures) = run_page("other.md", &other, &sandbox);
    assert!(
        failures.len() == 1 && failures[0].contains("PANAS 21"),
        "{failures:?}"
    );
    let apart = page.replace("```\n\n```text output", "```\nIt prints:\n```text output");
    let (_, failures) = run_page("apart.md", &apart, &sandbox);
    assert!(
        failures.len() == 1 && failures[0].contains("not right after"),
        "{failures:?}"
    );
}

#[test]
fn blocks_pair_a_runnable_block_with_its_output_and_read_indented_fences() {
    let text = "1. step\n\n   ```sh runnable\n   echo 1\n   echo 2\n   ```\n\n   ```text output\n   1\n   ```\n\n\
                ```sh runnable\necho 3\n```\nprose\n```text output\n3\n```\n";
    let b = blocks(text);
    assert_eq!(b.len(), 3, "{b:?}");
    assert_eq!((b[0].line, b[0].body.as_str()), (3, "echo 1\necho 2"));
    assert_eq!(b[0].expected.as_deref(), Some("1"));
    // Prose between them: the output block is a block of its own, not an expectation.
    assert_eq!(b[1].expected, None);
    assert_eq!(b[2].info, OUTPUT);
    assert_eq!(missing_lines("a  b\n\nc", "x\na b\n"), vec!["c".to_owned()]);
}

/// The page routes a page names (in inline code, code blocks or links), with the method when
/// the text says POST: (method, path as written).
pub fn routes_in(text: &str) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (i, _) in text.match_indices('/') {
        let rest = &text[i..];
        if !["/admin", "/s/", "/prolific/"]
            .iter()
            .any(|p| rest.starts_with(p))
        {
            continue;
        }
        // A path of its own, not the tail of a file path or another URL's path segment.
        let before = text[..i].chars().next_back();
        let url = text[..i].ends_with("127.0.0.1:8080");
        if !url && !before.is_none_or(|c| c == '`' || c == ' ' || c == '(' || c == '\n') {
            continue;
        }
        let path: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || "/_-{}.|…".contains(*c))
            .collect();
        let path = path.trim_end_matches(['.', '…']);
        // `/admin/studies/` names the addresses under it, not a page.
        if path.ends_with('/') {
            continue;
        }
        let path = path.to_owned();
        let method = if text[..i].ends_with("POST ") {
            "post"
        } else {
            "get"
        };
        out.insert((method.to_owned(), path));
    }
    out
}

/// A route as written with its placeholders filled from `fill`, or the placeholder unknown.
fn concrete(path: &str, fill: &HashMap<&str, String>) -> Result<String, String> {
    path.split('/')
        .map(|seg| {
            if let Some(inner) = seg.strip_prefix('{').and_then(|s| s.split('}').next()) {
                let tail = seg.split_once('}').map(|(_, t)| t).unwrap_or("");
                let first = inner.split('|').next().unwrap_or(inner);
                let value = fill
                    .get(inner)
                    .cloned()
                    .or_else(|| inner.contains('|').then(|| first.to_owned()));
                value.map(|v| v + tail).ok_or_else(|| seg.to_owned())
            } else if let Some(v) = fill.get(seg) {
                Ok(v.clone())
            } else {
                Ok(seg.to_owned())
            }
        })
        .collect::<Result<Vec<_>, _>>()
        .map(|segs| segs.join("/"))
}

fn every_page_route_the_docs_name_answers(db: TestDb) {
    let app = spawn_app(db);
    {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        emotionbench::app::demo::load_demo(&mut conn).unwrap();
    }
    let pid = "5f1a2b3c4d5e6f7a8b9c0d99";
    crate::survey::walk_to(
        &app.browser(),
        &format!("/s/demo?PROLIFIC_PID={pid}"),
        "situation",
    );
    // A model run on the demo study (the fake provider), so that its report has charts.
    let fake =
        FakeServer::start(|req| FakeAction::answer(req, 3, std::time::Duration::ZERO)).unwrap();
    let cfg = crate::runs::config(&[crate::runs::provider(
        "fake",
        "openai",
        &fake.base_url(),
        "",
    )]);
    let run = crate::runs::eb(
        &app.db,
        &cfg,
        &[
            "run",
            "--study",
            "demo",
            "--provider",
            "fake",
            "--model",
            "m",
            "--repeats",
            "1",
            "--default-repeats",
            "2",
        ],
        &[],
    );
    crate::helpers::ok(run);
    let admin = crate::admin::signed_in(&app, Role::Admin);
    let monitor = admin.get("/admin/studies/demo").body;
    let pilot = monitor
        .split("/pilot/")
        .nth(1)
        .and_then(|t| t.split(['"', '&', '<']).next())
        .expect("the monitor shows a pilot link")
        .to_owned();
    let export_id = participant_export_id(&app, pid);
    let fill: HashMap<&str, String> = [
        ("study", "demo".to_owned()),
        ("SLUG", "demo".to_owned()),
        ("S", "demo".to_owned()),
        ("id", export_id.clone()),
        ("participant", export_id),
        ("TOKEN", pilot),
        ("page", "situation".to_owned()),
    ]
    .into_iter()
    .collect();
    let mut problems = Vec::new();
    let mut checked = BTreeSet::new();
    for page in pages() {
        for (method, written) in routes_in(&read(&page)) {
            let path = match concrete(&written, &fill) {
                Ok(p) => p,
                Err(seg) => {
                    problems.push(format!("{page}: `{written}`: no value for `{seg}`"));
                    continue;
                }
            };
            if !checked.insert((method.clone(), path.clone())) {
                continue;
            }
            let reply = if method == "post" {
                admin.post(&path, &[])
            } else {
                admin.get(&path)
            };
            if reply.status == 404 {
                problems.push(format!("{page}: {method} `{written}` ({path}) answers 404"));
            }
        }
    }
    eprintln!("docs: {} page routes answered", checked.len());
    assert!(checked.len() >= 15, "only {} routes found", checked.len());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

on_both_backends!(every_page_route_the_docs_name_answers);

fn participant_export_id(app: &crate::helpers::TestApp, pid: &str) -> String {
    use diesel::prelude::*;
    use emotionbench::store::schema::participants;
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    participants::table
        .filter(participants::prolific_pid.eq(pid))
        .select(participants::export_id)
        .get_result(&mut conn)
        .unwrap()
}

/// Relative links of a page (`](target)`), without anchors.
fn links(text: &str) -> Vec<String> {
    text.split("](")
        .skip(1)
        .filter_map(|s| s.split(')').next())
        .chain(
            text.split("src=\"")
                .skip(1)
                .filter_map(|s| s.split('"').next()),
        )
        .filter(|t| !t.contains("://") && !t.starts_with('#') && !t.starts_with("mailto:"))
        .map(|t| t.split('#').next().unwrap_or(t).to_owned())
        .filter(|t| !t.is_empty())
        .collect()
}

#[test]
fn the_table_of_contents_reaches_every_page_and_every_link_resolves() {
    let toc = read("docs/README.md");
    let linked: BTreeSet<PathBuf> = links(&toc)
        .iter()
        .map(|t| normal(&root().join("docs").join(t)))
        .collect();
    let mut problems = Vec::new();
    for page in pages() {
        let text = read(&page);
        let path = root().join(&page);
        if page.starts_with("docs/") && page != "docs/README.md" && !linked.contains(&normal(&path))
        {
            problems.push(format!("docs/README.md does not link {page}"));
        }
        for target in links(&text) {
            let file = normal(&path.parent().unwrap().join(&target));
            if !file.exists() {
                problems.push(format!("{page}: link to {target}: no such file"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A path with `.` and `..` resolved (without touching the file system).
fn normal(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[test]
fn the_front_page_stays_a_front_page() {
    let lines = read("README.md").lines().count();
    assert!(lines <= 150, "README.md has {lines} lines (at most 150)");
}

#[test]
fn every_picture_the_docs_embed_is_one_the_browser_tests_write() {
    let mut embedded = BTreeSet::new();
    let mut problems = Vec::new();
    for page in pages() {
        let path = root().join(&page);
        for target in links(&read(&page))
            .into_iter()
            .filter(|t| t.ends_with(".png"))
        {
            let file = normal(&path.parent().unwrap().join(&target));
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            if !crate::browser::GUIDE_SHOTS
                .iter()
                .any(|s| [360, 1280].iter().any(|w| name == format!("{s}-{w}.png")))
            {
                problems.push(format!(
                    "{page}: {target} is not a screenshot of browser::GUIDE_SHOTS"
                ));
            }
            embedded.insert(name);
        }
    }
    for shot in crate::browser::GUIDE_SHOTS {
        for w in [360, 1280] {
            let name = format!("{shot}-{w}.png");
            if !root().join("docs/img").join(&name).exists() {
                problems.push(format!(
                    "docs/img/{name} is missing (run the browser tests)"
                ));
            }
            if !embedded.contains(&name) {
                problems.push(format!("docs/img/{name} is embedded by no page"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The paper's page is followed literally with the upstream files only: each of its runnable
/// blocks shows what it prints (compared by the test above) and none reads our derived files.
#[test]
fn the_reproduction_page_shows_the_figures_of_every_step_from_upstream_files_only() {
    let page = read("docs/reproduce.md");
    let runnable: Vec<Block> = blocks(&page)
        .into_iter()
        .filter(|b| b.info == RUNNABLE)
        .collect();
    assert!(runnable.len() >= 5, "{runnable:?}");
    for b in &runnable {
        assert!(
            b.expected.is_some(),
            "docs/reproduce.md:{}: a step without the figures it prints",
            b.line
        );
        assert!(
            !b.body.contains("derived"),
            "docs/reproduce.md:{}: reads a derived file",
            b.line
        );
        assert!(
            b.body.contains("EmotionBench/") || b.body.contains("emotionbench report"),
            "docs/reproduce.md:{}: neither reads the upstream files nor reports",
            b.line
        );
    }
}
