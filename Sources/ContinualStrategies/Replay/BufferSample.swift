/// One sample offered to a buffer policy while the stream goes by (features still float32).
public struct BufferSample {
    public var features: ArraySlice<Float>
    public var label: Int32
    public var route: Int32
    public var origin: SampleOrigin

    public init(features: ArraySlice<Float>, label: Int32, route: Int32, origin: SampleOrigin) {
        self.features = features
        self.label = label
        self.route = route
        self.origin = origin
    }
}
