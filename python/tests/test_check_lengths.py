"""Experiments/tools/check_lengths.py: its brace counter measures Swift functions correctly
(strings, multi-line strings and comments holding braces; bodiless requirements), and the
ratchet fails on a new or grown long function."""
import os
import sys

from conftest import REPO

sys.path.insert(0, os.path.join(REPO, "Experiments", "tools"))
import check_lengths as C  # noqa: E402

SWIFT = '''protocol P {
    func required() -> Int
    var stored: Int { get }
}
struct S {
    var plain: Int = 0
    public static func short(_ x: Int) -> String {
        let a = "{ not a brace"  // } nor this
        let b = """
            { } } }
            """
        return a + b + "\\\\" + "}"
    }
    var computed: Int {
        1
    }
    @discardableResult
    mutating func twoLine() -> Int { plain }
    init(x: Int) {
        plain = x
    }
}
'''


def test_functions_are_measured_from_declaration_to_closing_brace():
    found = set(C.functions(SWIFT))
    assert found == {("var stored", 3, 1), ("func short", 7, 7), ("var computed", 14, 3), ("func twoLine", 18, 1),
                     ("init", 19, 3)}


def test_the_ratchet_fails_on_a_new_or_grown_function(tmp_path, monkeypatch):
    body = "    func long() {\n" + "        _ = 1\n" * 90 + "    }\n"
    src = tmp_path / "Sources" / "M"
    src.mkdir(parents=True)
    (src / "A.swift").write_text("struct A {\n" + body + "}\n")
    long, _ = C.scan(str(tmp_path))
    assert long == {("Sources/M/A.swift", "func long"): 92}
    monkeypatch.setattr(C, "REPO", str(tmp_path))
    monkeypatch.setattr(C, "BASELINE", str(tmp_path / "baseline.txt"))
    assert C.main([]) == 1                       # new and too long
    assert C.main(["--write-baseline"]) == 0
    assert C.main([]) == 0                       # known, not grown
    (src / "A.swift").write_text("struct A {\n" + body.replace("    }\n", "        _ = 2\n    }\n") + "}\n")
    assert C.main([]) == 1                       # grew by a line
    (src / "B.swift").write_text("\n" * 401)
    assert C.main(["--write-baseline"]) == 0 and C.main([]) == 0
    (src / "B.swift").write_text("\n" * 402)
    assert C.main([]) == 1                       # a listed file grew


def test_python_functions_and_files_are_measured_too(tmp_path):
    """Python under python/continualkit/ and Experiments/: a def from its line to its body's last
    line, nested defs on their own; pip's python/build copy is not source."""
    src = "def outer():\n" + "    x = 1\n" * 85 + "    def inner():\n        return 2\n    return inner\n"
    assert ("def outer", 1, 89) in C.python_functions(src) and ("def inner", 87, 2) in C.python_functions(src)
    for folder in ("python/continualkit", "Experiments/tools", "python/build/lib/continualkit"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "m.py").write_text(src + "\n" * 320)
    long, _ = C.scan(str(tmp_path))
    assert long == {("python/continualkit/m.py", "def outer"): 89, ("python/continualkit/m.py", "<file>"): 409,
                    ("Experiments/tools/m.py", "def outer"): 89, ("Experiments/tools/m.py", "<file>"): 409}
