import ContinualExperiments
import Foundation

/// The results file `run` and `sweep` write, and the rules for what may already be there:
/// - an existing file needs `--resume` (keep its runs) or `--overwrite` (replace it);
/// - `--resume` on a file that does not exist is refused (a mistyped path would otherwise redo
///   every run into a new file); `--resume-or-start` resumes a file that exists and starts one
///   that does not (for scripts that rerun the same command). Finished runs a killed process left
///   only in the journal (`NAME.h5.journal/`), and finished selection runs of an interrupted
///   tuning (`NAME.h5.tuning`, `TuningJournal`), count as something to resume;
/// - a path holding something other than an HDF5 file (a text file, a JSON, a directory) is
///   refused even with `--overwrite`: the toolkit replaces only its own kind of file. An empty
///   file holds nothing to lose and counts as missing.
struct ResultsOutput {
    var path: String
    var resume = false
    var resumeOrStart = false
    var overwrite = false

    /// Whether an existing file's runs are kept (false: the file is new or replaced).
    var keepsRuns: Bool { resume || (resumeOrStart && hasRuns) }

    /// The file exists, or a killed process left finished runs in its journal or tuning journal.
    private var hasRuns: Bool {
        FileKind.of(path) == .hdf5 || !SweepWriter.journalEntries(path).isEmpty || !TuningJournal(results: path).entries().isEmpty
    }

    /// The tuning journal for this output, under the writer lock: when resuming, kept with its
    /// entries and given the selection runs the file's `/tuning` holds (`finishedSelectionRuns`);
    /// started empty otherwise (a fresh start or --overwrite does not reuse it).
    func tuningJournal() throws -> TuningJournal {
        do { try WriterLock.acquire(path) } catch { throw CLIFailure.badInput("\(error)") }
        try check(beforeTuning: true)
        let journal = TuningJournal(results: path)
        let kept = keepsRuns ? Self.finishedSelectionRuns(path).merging(journal.entries()) { _, journaled in journaled } : [:]
        do { try journal.start(with: kept) } catch {
            throw CLIFailure.badInput("cannot write the tuning journal \(journal.path): \(error)")
        }
        return journal
    }

    /// The selection runs a results file holds in `/tuning`, by run id (`TuningRecord.entries`):
    /// none when it has no `/tuning` or was written before run ids were stored.
    static func finishedSelectionRuns(_ path: String) -> [String: TuningJournal.Entry] {
        guard FileKind.of(path) == .hdf5, let records = try? TuningReader.read(path: path) else { return [:] }
        return records.reduce(into: [:]) { all, r in all.merge(r.entries) { a, _ in a } }
    }

    /// Refuses a combination of flags and file that cannot be written (exit 2), before any work:
    /// called before tuning and preflight, and again by `openWriter` under the writer lock.
    /// `beforeTuning`: also refuse to start afresh over an interrupted tuning's journal (after
    /// tuning, the journal is this command's own).
    func check(beforeTuning: Bool = false) throws {
        let flags = [resume ? "--resume" : nil, resumeOrStart ? "--resume-or-start" : nil, overwrite ? "--overwrite" : nil]
            .compactMap { $0 }
        guard flags.count <= 1 else { throw CLIFailure.badInput("use only one of \(flags.joined(separator: ", "))") }
        switch FileKind.of(path) {
        case .hdf5:
            if !resume && !resumeOrStart && !overwrite {
                throw CLIFailure.badInput("\(path) exists; use --resume to complete it or --overwrite to replace it")
            }
        case let kind where kind == .missing || kind == .empty:
            let tuned = TuningJournal(results: path).entries().count
            if beforeTuning && tuned > 0 && !resume && !resumeOrStart && !overwrite {
                throw CLIFailure.badInput("\(TuningJournal(results: path).path) holds \(tuned) finished selection run(s) of an interrupted "
                    + "tuning for \(path); use --resume to continue it or --overwrite to start again")
            }
            if resume && !hasRuns {
                throw CLIFailure.badInput("\(path) \(kind == .empty ? "is empty" : "does not exist"): there is nothing to resume. "
                    + "Drop --resume to start it, "
                    + "or use --resume-or-start to resume it if it exists and start it if not")
            }
        default:
            try FileChecks.refuseReplacingForeign(path)
        }
    }

    /// Takes the writer lock, checks again (another process may have created the file since) and
    /// opens the writer; warns about damaged run groups and recovered runs of an existing file.
    func openWriter(_ session: SweepSession) throws -> SweepWriter {
        try check()
        // One writer per file, for the whole command (released at exit).
        do { try WriterLock.acquire(path) } catch { throw CLIFailure.badInput("\(error)") }
        try check()
        let writer: SweepWriter
        do { writer = try session.makeWriter(path: path, resume: keepsRuns) } catch { throw CLIFailure.badInput("\(error)") }
        for d in writer.damaged { printError("warning: \(path): run group \(d.id) was unreadable (\(d.reason)); removed, it runs again") }
        if writer.recovered > 0 {
            printError("note: \(path): recovered \(writer.recovered) finished run(s) an interrupted process left in \(writer.journal)")
        }
        return writer
    }
}
