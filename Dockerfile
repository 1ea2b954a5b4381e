# The service's image: a static binary on a distroless base.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/readings .

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/readings /readings
ENV LISTEN_ADDR=0.0.0.0:8080 LOG_FORMAT=json
EXPOSE 8080
# The image has no shell and no curl: the binary asks itself.
HEALTHCHECK --interval=10s --timeout=6s --start-period=60s CMD ["/readings", "healthcheck"]
ENTRYPOINT ["/readings"]
CMD ["serve"]
