//! What a Python project declares about itself, read from its files
//! (`pyproject.toml`, `setup.cfg`, `setup.py`, `requirements*.txt`, lock
//! files): its distribution name, the folders its packages live in, its
//! dependencies, test extras and dependency groups, and the command its
//! users install it with.
//!
//! Read only, from the files on disk; nothing here runs the project's code
//! or asks an index. `setup.py` is read as text (a few literal patterns),
//! never executed. What a reading cannot tell is left out rather than
//! guessed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The files that declare a project (the folder holding one is its root).
pub const PROJECT_FILES: &[&str] = &["pyproject.toml", "setup.py", "setup.cfg"];

/// Lock files swarm can build an environment from, in its order of preference.
pub const LOCK_FILES: &[&str] = &["uv.lock", "pylock.toml", "poetry.lock", "pdm.lock"];

/// The names of extras and dependency groups that hold test dependencies.
const TEST_EXTRAS: &[&str] = &["test", "tests", "testing", "dev", "develop", "all"];

/// A Python project as its files declare it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Project {
    /// The folder holding the declaration files.
    pub dir: PathBuf,
    /// `[project] name` (or setup.cfg's / setup.py's `name`).
    pub name: Option<String>,
    /// Folders the packages live in, besides the project's own folder
    /// (`src/`, `package-dir`, `where`, hatch's, poetry's and pdm's
    /// folders), those that exist.
    pub source_dirs: Vec<PathBuf>,
    /// Every requirement named as a dependency, an optional dependency or
    /// in a dependency group or requirements file, by normalised name.
    pub dependencies: BTreeSet<String>,
    /// The extras that hold test dependencies (`test`, `dev`, …).
    pub test_extras: Vec<String>,
    /// The dependency groups that hold test dependencies.
    pub test_groups: Vec<String>,
    /// `requirements*.txt` files (and `requirements/*.txt`), relative to `dir`.
    pub requirement_files: Vec<String>,
    /// The lock file the project keeps, relative to `dir`.
    pub lock_file: Option<String>,
    /// Whether a build backend can install the project itself
    /// (`[build-system]`, `setup.py`, or `[project]` in pyproject).
    pub installable: bool,
}

impl Project {
    /// The project holding `start`: the nearest folder from `start` up to
    /// `ceiling` (inclusive) with a declaration file; `start` itself as a
    /// project without declarations when there is none.
    pub fn find(start: &Path, ceiling: &Path) -> Project {
        for dir in start.ancestors() {
            if PROJECT_FILES.iter().any(|f| dir.join(f).is_file()) {
                return Project::read(dir);
            }
            if dir == ceiling || !dir.starts_with(ceiling) {
                break;
            }
        }
        let mut bare = Project::read(start);
        bare.installable = false;
        bare
    }

    /// The declarations of the project in `dir`.
    pub fn read(dir: &Path) -> Project {
        let mut project = Project {
            dir: dir.to_path_buf(),
            ..Project::default()
        };
        let mut declared_dirs: Vec<String> = Vec::new();
        if let Some(doc) = read_toml(&dir.join("pyproject.toml")) {
            project.read_pyproject(&doc, &mut declared_dirs);
        }
        if let Ok(text) = std::fs::read_to_string(dir.join("setup.cfg")) {
            project.read_setup_cfg(&text, &mut declared_dirs);
        }
        if let Ok(text) = std::fs::read_to_string(dir.join("setup.py")) {
            project.installable = true;
            project.read_setup_py(&text, &mut declared_dirs);
        }
        project.requirement_files = requirement_files(dir);
        for file in &project.requirement_files {
            if let Ok(text) = std::fs::read_to_string(dir.join(file)) {
                project.dependencies.extend(requirement_lines(&text));
            }
        }
        project.lock_file = LOCK_FILES
            .iter()
            .find(|f| dir.join(f).is_file())
            .map(|f| f.to_string());
        declared_dirs.insert(0, "src".to_string());
        for rel in declared_dirs {
            let rel = rel.trim().trim_start_matches("./").trim_end_matches('/');
            if rel.is_empty() || rel == "." || rel.split('/').any(|p| p == "..") {
                continue;
            }
            let path = dir.join(rel);
            if path.is_dir() && !project.source_dirs.contains(&path) {
                project.source_dirs.push(path);
            }
        }
        project.test_extras.sort();
        project.test_extras.dedup();
        project.test_groups.sort();
        project.test_groups.dedup();
        project
    }

    fn read_pyproject(&mut self, doc: &toml::Table, dirs: &mut Vec<String>) {
        self.installable |= doc.contains_key("build-system") || doc.contains_key("project");
        if let Some(project) = doc.get("project").and_then(|p| p.as_table()) {
            self.name = project
                .get("name")
                .and_then(|n| n.as_str())
                .map(str::to_string);
            self.dependencies
                .extend(requirements_in(project.get("dependencies")));
            if let Some(extras) = project
                .get("optional-dependencies")
                .and_then(|o| o.as_table())
            {
                for (extra, list) in extras {
                    self.dependencies.extend(requirements_in(Some(list)));
                    if TEST_EXTRAS.contains(&extra.as_str()) {
                        self.test_extras.push(extra.clone());
                    }
                }
            }
        }
        if let Some(groups) = doc.get("dependency-groups").and_then(|g| g.as_table()) {
            for (group, list) in groups {
                self.dependencies.extend(requirements_in(Some(list)));
                if TEST_EXTRAS.contains(&group.as_str()) {
                    self.test_groups.push(group.clone());
                }
            }
        }
        if let Some(tool) = doc.get("tool").and_then(|t| t.as_table()) {
            self.read_tool_tables(tool, dirs);
        }
    }

    /// The `[tool.*]` tables of the build backends and managers: package
    /// folders (setuptools, hatch, poetry, pdm) and poetry's dependencies.
    fn read_tool_tables(&mut self, tool: &toml::Table, dirs: &mut Vec<String>) {
        let at = |path: &[&str]| -> Option<&toml::Value> {
            let mut value = tool.get(path[0])?;
            for key in &path[1..] {
                value = value.get(key)?;
            }
            Some(value)
        };
        if let Some(root) = at(&["setuptools", "package-dir", ""]).and_then(|v| v.as_str()) {
            dirs.push(root.to_string());
        }
        dirs.extend(strings(at(&["setuptools", "packages", "find", "where"])));
        for package in strings(at(&["hatch", "build", "targets", "wheel", "packages"])) {
            if let Some((parent, _)) = package.trim_end_matches('/').rsplit_once('/') {
                dirs.push(parent.to_string());
            }
        }
        match at(&["hatch", "build", "targets", "wheel", "sources"]) {
            Some(toml::Value::Array(list)) => {
                dirs.extend(list.iter().filter_map(|v| v.as_str().map(str::to_string)))
            }
            Some(toml::Value::Table(map)) => dirs.extend(map.keys().cloned()),
            _ => {}
        }
        if let Some(packages) = at(&["poetry", "packages"]).and_then(|p| p.as_array()) {
            for package in packages {
                if let Some(from) = package.get("from").and_then(|f| f.as_str()) {
                    dirs.push(from.to_string());
                }
            }
        }
        if let Some(deps) = at(&["poetry", "dependencies"]).and_then(|d| d.as_table()) {
            self.dependencies.extend(
                deps.keys()
                    .filter(|k| k.as_str() != "python")
                    .map(|k| normalise(k)),
            );
        }
        if let Some(groups) = at(&["poetry", "group"]).and_then(|g| g.as_table()) {
            for (name, group) in groups {
                if let Some(deps) = group.get("dependencies").and_then(|d| d.as_table()) {
                    self.dependencies.extend(deps.keys().map(|k| normalise(k)));
                }
                if TEST_EXTRAS.contains(&name.as_str()) {
                    self.test_groups.push(name.clone());
                }
            }
        }
        if let Some(dir) = at(&["pdm", "build", "package-dir"]).and_then(|v| v.as_str()) {
            dirs.push(dir.to_string());
        }
    }

    fn read_setup_cfg(&mut self, text: &str, dirs: &mut Vec<String>) {
        self.installable = true;
        let sections = ini_sections(text);
        for (section, key, value) in &sections {
            match (section.as_str(), key.as_str()) {
                ("metadata", "name") if self.name.is_none() => {
                    self.name = Some(value.trim().to_string());
                }
                ("options", "package_dir") => {
                    for line in value.lines() {
                        if let Some((name, dir)) = line.split_once('=') {
                            if name.trim().is_empty() {
                                dirs.push(dir.trim().to_string());
                            }
                        }
                    }
                }
                ("options.packages.find", "where") => dirs.push(value.trim().to_string()),
                ("options", "install_requires") | ("options", "tests_require") => {
                    self.dependencies.extend(requirement_lines(value));
                }
                ("options.extras_require", extra) => {
                    self.dependencies.extend(requirement_lines(value));
                    if TEST_EXTRAS.contains(&extra) {
                        self.test_extras.push(extra.to_string());
                    }
                }
                _ => {}
            }
        }
    }

    fn read_setup_py(&mut self, text: &str, dirs: &mut Vec<String>) {
        let pattern = regex::Regex::new(r#"package_dir\s*=\s*\{\s*["']{2}\s*:\s*["']([^"']+)["']"#)
            .expect("a valid pattern");
        dirs.extend(pattern.captures_iter(text).map(|c| c[1].to_string()));
        if self.name.is_none() {
            let name = regex::Regex::new(r#"\bname\s*=\s*["']([A-Za-z0-9_.\-]+)["']"#)
                .expect("a valid pattern");
            self.name = name.captures(text).map(|c| c[1].to_string());
        }
        let quoted = regex::Regex::new(
            r#"["']([A-Za-z0-9][A-Za-z0-9_.\-\[\],]*)\s*(?:[<>=!~;][^"']*)?["']"#,
        )
        .expect("a valid pattern");
        for block in ["install_requires", "tests_require", "extras_require"] {
            if let Some(start) = text.find(block) {
                let rest = &text[start..];
                let end = rest.find(')').unwrap_or(rest.len()).min(4000);
                for c in quoted.captures_iter(&rest[..end]) {
                    let name = c[1].split('[').next().unwrap_or_default();
                    if name != block {
                        self.dependencies.insert(normalise(name));
                    }
                }
            }
        }
    }

    /// Whether `module` (a top-level import name) is the import name of a
    /// declared dependency: `yaml` for `PyYAML`, `dateutil` for
    /// `python-dateutil`, `PIL` for `Pillow`, `xdist` for `pytest-xdist`…
    pub fn declares_module(&self, module: &str) -> bool {
        self.distribution_of(module).is_some()
    }

    /// The declared dependency (normalised) that provides the top-level
    /// module `module` (see [`distribution_provides`]); failing that, one
    /// whose name starts with the module's and a dash (`frobnicate-tools`
    /// for `frobnicate`).
    pub fn distribution_of(&self, module: &str) -> Option<&str> {
        let wanted = normalise(module);
        let prefix = format!("{wanted}-");
        self.dependencies
            .iter()
            .find(|dep| distribution_provides(dep, &wanted))
            .or_else(|| {
                self.dependencies
                    .iter()
                    .find(|dep| dep.starts_with(&prefix))
            })
            .map(String::as_str)
    }

    /// The command that installs the project with its test dependencies
    /// into the active environment, as its files say: `pip install -e
    /// '.[test]'`, with `--group` for dependency groups, or `-r` for a
    /// requirements file; `None` when the project declares nothing to install.
    pub fn install_command(&self) -> Option<String> {
        let mut parts = vec!["pip install".to_string()];
        if self.installable {
            if self.test_extras.is_empty() {
                parts.push("-e .".to_string());
            } else {
                parts.push(format!("-e '.[{}]'", self.test_extras.join(",")));
            }
            for group in &self.test_groups {
                parts.push(format!("--group {group}"));
            }
        } else if !self.requirement_files.is_empty() {
            for file in &self.requirement_files {
                parts.push(format!("-r {file}"));
            }
        } else {
            return None;
        }
        Some(parts.join(" "))
    }
}

/// The distribution `dist` (normalised) provides the module `module`
/// (normalised): the same name, the name without a `python-`/`py`/`pytest-`
/// prefix, or one of the well-known pairs whose names differ.
pub fn distribution_provides(dist: &str, module: &str) -> bool {
    const KNOWN: &[(&str, &str)] = &[
        ("pyyaml", "yaml"),
        ("pillow", "pil"),
        ("beautifulsoup4", "bs4"),
        ("scikit-learn", "sklearn"),
        ("scikit-image", "skimage"),
        ("opencv-python", "cv2"),
        ("opencv-python-headless", "cv2"),
        ("attrs", "attr"),
        ("pyjwt", "jwt"),
        ("pycryptodome", "crypto"),
        ("pyopenssl", "openssl"),
        ("gitpython", "git"),
        ("protobuf", "google"),
        ("msgpack-python", "msgpack"),
        ("typing-extensions", "typing-extensions"),
        ("pytest-cov", "pytest-cov"),
        ("python-dateutil", "dateutil"),
        ("python-dotenv", "dotenv"),
        ("setuptools", "pkg-resources"),
    ];
    if dist == module || KNOWN.contains(&(dist, module)) {
        return true;
    }
    ["python-", "py", "pytest-", "django-", "flask-"]
        .iter()
        .any(|prefix| dist.strip_prefix(prefix) == Some(module))
}

/// A name as PEP 503 compares them: lower case, runs of `-`, `_`, `.` as `-`.
pub fn normalise(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut dash = false;
    for c in name.trim().chars() {
        if matches!(c, '-' | '_' | '.') {
            dash = true;
            continue;
        }
        if dash && !out.is_empty() {
            out.push('-');
        }
        dash = false;
        out.extend(c.to_lowercase());
    }
    out
}

/// The distribution name a requirement string starts with, normalised.
fn requirement_name(line: &str) -> Option<String> {
    let line = line.split('#').next().unwrap_or_default().trim();
    if line.is_empty() || line.starts_with('-') || line.contains("://") {
        return None;
    }
    let end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(line.len());
    let name = &line[..end];
    (!name.is_empty()).then(|| normalise(name))
}

/// The names in a list of requirement strings.
fn requirements_in(value: Option<&toml::Value>) -> Vec<String> {
    value
        .and_then(|v| v.as_array())
        .map(|list| {
            list.iter()
                .filter_map(|item| item.as_str().and_then(requirement_name))
                .collect()
        })
        .unwrap_or_default()
}

/// The names in a requirements text (one per line).
fn requirement_lines(text: &str) -> Vec<String> {
    text.lines().filter_map(requirement_name).collect()
}

/// The strings of a string or an array of strings.
fn strings(value: Option<&toml::Value>) -> Vec<String> {
    match value {
        Some(toml::Value::String(s)) => vec![s.clone()],
        Some(toml::Value::Array(list)) => list
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

fn read_toml(path: &Path) -> Option<toml::Table> {
    std::fs::read_to_string(path).ok()?.parse().ok()
}

/// `requirements*.txt` in `dir` and `*.txt` in `dir/requirements/`, sorted.
fn requirement_files(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let listed = |folder: &Path| -> Vec<String> {
        std::fs::read_dir(folder)
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|e| e.path().is_file())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    for name in listed(dir) {
        if name.starts_with("requirements") && name.ends_with(".txt") {
            found.push(name);
        }
    }
    for name in listed(&dir.join("requirements")) {
        if name.ends_with(".txt") {
            found.push(format!("requirements/{name}"));
        }
    }
    found.sort();
    found
}

/// `(section, key, value)` of an INI text; continuation lines join the
/// value with newlines.
fn ini_sections(text: &str) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = Vec::new();
    let mut section = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
            continue;
        }
        if let Some(name) = trimmed.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            section = name.trim().to_string();
            continue;
        }
        if line.starts_with([' ', '\t']) {
            if let Some(last) = out.last_mut() {
                last.2.push('\n');
                last.2.push_str(trimmed);
            }
            continue;
        }
        if let Some((key, value)) = trimmed.split_once(['=', ':']) {
            out.push((
                section.clone(),
                key.trim().to_string(),
                value.trim().to_string(),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        for (path, text) in files {
            let full = dir.path().join(path);
            std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
            std::fs::write(full, text).expect("write");
        }
        dir
    }

    #[test]
    fn a_src_layout_pyproject_with_test_extras() {
        let dir = tree(&[
            (
                "pyproject.toml",
                "[build-system]\nrequires = ['hatchling']\n\n[project]\nname = 'Semver_Tools'\n\
                 dependencies = ['PyYAML>=6', 'python-dateutil']\n\n\
                 [project.optional-dependencies]\ntest = ['pytest-cov', 'hypothesis']\ndocs = ['sphinx']\n\n\
                 [dependency-groups]\ndev = ['pytest-benchmark']\n",
            ),
            ("src/semver/__init__.py", ""),
            ("tests/test_x.py", ""),
        ]);
        let project = Project::find(&dir.path().join("tests"), dir.path());
        assert_eq!(project.dir, dir.path());
        assert_eq!(project.name.as_deref(), Some("Semver_Tools"));
        assert_eq!(project.source_dirs, vec![dir.path().join("src")]);
        assert_eq!(project.test_extras, vec!["test"]);
        assert_eq!(project.test_groups, vec!["dev"]);
        assert!(project.declares_module("yaml"));
        assert!(project.declares_module("dateutil"));
        assert!(project.declares_module("hypothesis"));
        assert!(!project.declares_module("numpy"));
        assert_eq!(
            project.install_command().as_deref(),
            Some("pip install -e '.[test]' --group dev")
        );
    }

    #[test]
    fn declared_package_folders_and_requirements_files() {
        let dir = tree(&[
            ("setup.cfg", "[metadata]\nname = flatpkg\n\n[options]\npackage_dir =\n    =lib\ninstall_requires =\n    requests>=2\n"),
            ("lib/flatpkg/__init__.py", ""),
            ("requirements-dev.txt", "pytest\n-r requirements.txt\nmock==5 # tests\n"),
        ]);
        let project = Project::read(dir.path());
        assert_eq!(project.name.as_deref(), Some("flatpkg"));
        assert_eq!(project.source_dirs, vec![dir.path().join("lib")]);
        assert_eq!(project.requirement_files, vec!["requirements-dev.txt"]);
        assert!(project.declares_module("requests") && project.declares_module("mock"));
        assert_eq!(
            project.install_command().as_deref(),
            Some("pip install -e .")
        );

        let bare = tree(&[("requirements.txt", "numpy\n"), ("test.py", "")]);
        let project = Project::find(bare.path(), bare.path());
        assert!(!project.installable);
        assert_eq!(
            project.install_command().as_deref(),
            Some("pip install -r requirements.txt")
        );
        let nothing = tree(&[("test.py", "")]);
        assert_eq!(
            Project::find(nothing.path(), nothing.path()).install_command(),
            None
        );
    }

    #[test]
    fn setup_py_is_read_as_text() {
        let dir = tree(&[(
            "setup.py",
            "from setuptools import setup\nsetup(\n    name='tool',\n    package_dir={'': 'source'},\n    install_requires=['click>=8', \"attrs\"],\n)\n",
        )]);
        std::fs::create_dir_all(dir.path().join("source")).unwrap();
        let project = Project::read(dir.path());
        assert_eq!(project.name.as_deref(), Some("tool"));
        assert_eq!(project.source_dirs, vec![dir.path().join("source")]);
        assert!(project.declares_module("click") && project.declares_module("attr"));
    }

    #[test]
    fn names_compare_as_pep_503_says() {
        assert_eq!(normalise("Foo.Bar__baz"), "foo-bar-baz");
        assert!(distribution_provides("pytest-xdist", "xdist"));
        assert!(distribution_provides("python-dateutil", "dateutil"));
        assert!(!distribution_provides("numpy", "pandas"));
    }
}
