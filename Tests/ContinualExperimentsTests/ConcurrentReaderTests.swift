import Foundation
import Testing
@testable import ContinualExperiments

/// Issue 41.6: `inspect --verify` during a running sweep called healthy runs damaged (2 of 5
/// calls) when the writer folded a journal entry into the file and deleted it while the reader
/// was listing the journal. A reader now sees one committed state.
@Suite("Readers during a write", .serialized)
struct ConcurrentReaderTests {
    @Test("a journal entry that vanishes while read (folded into the file) is not damage; one already folded is not counted twice")
    func vanishedJournalEntries() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let exp = dir.write("e.json", tinyExperiment(name: "cr"))
        let out = dir.path("r.h5")
        let r = try runCLI(["sweep", exp, "-o", out, "--jobs", "1", "--plain"])
        #expect(r.status == 0, "\(r.stderr)")
        let ids = try ResultsReader.read(path: out).runs.map(\.runId)
        let journal = SweepWriter.journalPath(for: out)
        try FileManager.default.createDirectory(atPath: journal, withIntermediateDirectories: true)
        // An entry listed but gone when opened (a dangling link stands for "deleted after the
        // listing"), and a copy of a run the file already holds (folded, not yet deleted).
        try FileManager.default.createSymbolicLink(atPath: journal + "/0123456789abcdef.h5", withDestinationPath: dir.path("gone.h5"))
        try FileManager.default.copyItem(atPath: out, toPath: journal + "/\(ids[0]).h5")
        let verified = try ResultsReader.verify(path: out)
        #expect(verified.map(\.runId).sorted() == ids.sorted(), "\(verified.map(\.runId))")
        #expect(verified.allSatisfy { $0.status == .verified }, "\(verified.map { "\($0.status)" })")
        let cli = try runCLI(["inspect", out, "--verify"])
        #expect(cli.status == 0 && !cli.stdout.contains("damaged: unreadable"), "\(cli.stdout) \(cli.stderr)")
    }
}
