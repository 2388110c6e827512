import Foundation
import Testing

/// Issue 41.1: the read-check child that opens every untrusted HDF5 file first runs under an
/// address-space limit (`CONTINUALKIT_READ_MEMORY`, default 1 GiB + 8 × the file's size), so a
/// small file that inflates to gigabytes is refused without the process tree growing past it.
@Suite("Read-check limits")
struct ReadCheckLimitsTests {
    @Test("a file whose dataset inflates past the reader's memory limit is refused, naming the limit; an honest file passes")
    func inflatingFilesAreRefused() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let bomb = work.path("bomb.h5")
        // 512 MiB of zeros in 16 MiB gzip chunks: about half a megabyte on disk.
        guard try h5py("""
            f = h5py.File('\(bomb)', 'w')
            d = f.create_dataset('x', shape=(2**27,), dtype='f4', chunks=(2**22,), compression='gzip', compression_opts=1)
            for i in range(32): d[i * 2**22:(i + 1) * 2**22] = np.zeros(2**22, dtype='f4')
            f.close()
            """) else { return }
        let size = try FileManager.default.attributesOfItem(atPath: bomb)[.size] as? Int ?? 0
        #expect(size < 4 * 1024 * 1024)
        let limit = ["CONTINUALKIT_READ_MEMORY": "256M"]
        let refused = try runCLI(["inspect", bomb], environment: limit)
        #expect(refused.status == 2, "\(refused.stdout)\(refused.stderr)")
        #expect(refused.stderr.contains("memory limit of 256 MB"), "\(refused.stderr)")
        // The same limit reads an honest file (the quickstart's results) to the end.
        let honest = try sweptResults(in: work, name: "rl").path
        let ok = try runCLI(["inspect", honest, "--verify"], environment: limit)
        #expect(ok.status == 0, "\(ok.stdout)\(ok.stderr)")
    }
}
