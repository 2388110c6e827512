import ContinualHDF5
import Testing

@Test func dimensionLabelsAndScalesRoundTrip() throws {
    try withTemporaryFile { path in
        let file = try HDF5File.create(path: path)
        let run = try file.root.createGroup("run")
        let matrix = try run.write((0..<6).map(Double.init), shape: [2, 3], name: "accuracy")
        #expect(try matrix.dimensionLabels() == [nil, nil])
        try matrix.setDimensionLabels(["trained", "evaluated"])
        let trained = try run.write([0, 1] as [Int64], shape: [2], name: "trained")
        let evaluated = try run.write([0, 1, 2] as [Int64], shape: [3], name: "evaluated")
        try trained.makeDimensionScale(name: "trained")
        try matrix.attachDimensionScale(trained, toDimension: 0)
        try matrix.attachDimensionScale(evaluated, toDimension: 1)  // made a scale on the fly
        #expect(trained.isDimensionScale && evaluated.isDimensionScale && !matrix.isDimensionScale)
        let mismatch = #expect(throws: HDF5Error.self) { try matrix.attachDimensionScale(trained, toDimension: 1) }
        #expect(mismatch?.kind == .invalidArgument)
        try file.close()
        let reopened = try HDF5File.open(path: path).root.openDataset("run/accuracy")
        #expect(try reopened.dimensionLabels() == ["trained", "evaluated"])
        #expect(try reopened.attributes.names().contains("DIMENSION_LIST"))
    }
}
