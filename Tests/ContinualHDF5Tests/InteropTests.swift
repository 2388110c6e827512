import ContinualHDF5
import Foundation
import Testing

/// The `h5dump` executable, if installed (Debian: hdf5-tools).
private let h5dump = ["/usr/bin/h5dump", "/usr/local/bin/h5dump", "/opt/homebrew/bin/h5dump"]
    .first { FileManager.default.isExecutableFile(atPath: $0) }

@Test(.enabled(if: h5dump != nil, "h5dump is not installed"))
func h5dumpReadsOurFiles() throws {
    try withTemporaryFile { path in
        let file = try HDF5File.create(path: path)
        let run = try file.root.createGroup("runs/abc")
        try run.attributes.set("config", "{\"seed\": 1}")
        try run.write([1.0, 2.0, 3.0, 4.0], shape: [2, 2], name: "accuracy_matrix")
        try run.write(HDF5Table(columns: [("task", .string), ("acc", .float64)], rows: [["t0", 0.5]]), name: "summary")
        try file.close()

        let process = Process()
        process.executableURL = URL(fileURLWithPath: h5dump!)
        process.arguments = ["-H", path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(output.contains("DATASET \"accuracy_matrix\""))
        #expect(output.contains("H5T_IEEE_F64LE"))
        #expect(output.contains("DATASPACE  SIMPLE { ( 2, 2 ) / ( 2, 2 ) }"))
        #expect(output.contains("CSET H5T_CSET_UTF8"))
        #expect(output.contains("H5T_COMPOUND"))
        #expect(output.contains("( 1 ) / ( H5S_UNLIMITED )"))
    }
}
