// The preview of a picked worst sample: its pictures side by side, each with a caption (CorruptedSample.tsx:
// the corrupted input beside the clean one; OodSample.tsx: a row of the out-of-distribution dataset), or, where
// there is none to show (not an image, an exported report), the note that says why and what the models said.
import { useState } from "react";
import "./inspector.css";
import "./samplePictures.css";

export interface Picture {
  src: string;
  alt: string;
  caption: string;
}

function Figure({ picture }: { picture: Picture }) {
  const [failed, setFailed] = useState(false);
  return (
    <figure>
      {failed ? (
        <p className="muted">The picture could not be loaded.</p>
      ) : (
        <img
          src={picture.src}
          alt={picture.alt}
          width={192}
          height={192}
          onError={() => {
            setFailed(true);
          }}
        />
      )}
      <figcaption>{picture.caption}</figcaption>
    </figure>
  );
}

export function SamplePictures({
  label,
  heading,
  pictures,
  note,
  busy = false,
}: {
  /** The preview's accessible name. */
  label: string;
  heading: string;
  /** null: no picture to show; the note then says why. */
  pictures: readonly Picture[] | null;
  /** Under the pictures, or in their place. */
  note: string;
  /** The note is a loading message. */
  busy?: boolean;
}) {
  return (
    <div className="inspector" aria-label={label}>
      <h4>{heading}</h4>
      {pictures === null ? (
        <p className="muted" role={busy ? "status" : undefined}>
          {note}
        </p>
      ) : (
        <>
          <div className="inspector-input sample-pictures">
            {pictures.map((p) => (
              <Figure key={p.src} picture={p} />
            ))}
          </div>
          <p className="small-text muted">{note}</p>
        </>
      )}
    </div>
  );
}
