import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import ContinualExperiments

/// A spawned child (the git lookup of `Provenance`) inherits none of our descriptors, so it can
/// never hold a results file's lock after we closed the file (issue 26).
@Suite struct ChildProcessOutputTests {
    /// Runs `sh -c script` and returns its standard output.
    func shell(_ script: String) -> String? {
        ChildProcessOutput.run("sh", ["-c", script], environment: ProcessInfo.processInfo.environment)
            .map { String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) }
    }

    @Test func aDescriptorOpenWithoutCloseOnExecIsNotInherited() throws {
        // As libhdf5 opens a results file: no O_CLOEXEC. Moved to ≥ 300 so the number is ours alone.
        let opened = open("/dev/null", O_RDONLY)
        try #require(opened >= 0)
        let fd = fcntl(opened, F_DUPFD, 300)
        close(opened)
        try #require(fd >= 300)
        defer { close(fd) }
        #expect(fcntl(fd, F_GETFD) & FD_CLOEXEC == 0)
        // Without the close actions the child (the shell, $$) would see it open.
        #expect(shell("[ -e /proc/$$/fd/\(fd) ] && echo inherited || echo closed") == "closed")
    }

    @Test func standardOutputIsReturnedAndFailuresAreNil() {
        #expect(shell("printf 'a\\nb'") == "a\nb")
        #expect(shell("exit 3") == nil)
        #expect(shell("kill -9 $$") == nil)
        #expect(ChildProcessOutput.run("no-such-program-continualkit", [], environment: [:]) == nil)
    }
}
