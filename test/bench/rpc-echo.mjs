// A handwritten @grpc/grpc-js service definition: unary echo of raw bytes, no (de)serialization.
const id = (b) => b;
export const echoDefinition = {
  echo: {
    path: "/bench.Echo/Echo",
    requestStream: false,
    responseStream: false,
    requestSerialize: id,
    requestDeserialize: id,
    responseSerialize: id,
    responseDeserialize: id,
  },
};
