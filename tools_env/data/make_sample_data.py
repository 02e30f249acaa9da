"""Regenerate the bundled sample gallery (small synthetic scenes) and its manifest.

The scenes and the places they show are fictional; the sample corpus (sample_corpus.jsonl) describes them,
so an offline episode can go image -> image_search -> text_search -> visit. Run from the repository root:

    python tools_env/data/make_sample_data.py
"""

import json
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

HERE = Path(__file__).parent
W, H = 320, 240
BASE = "https://en.example.org/wiki/"


def font(size):
    return ImageFont.load_default(size=size)


def lighthouse(d):
    d.rectangle([0, 0, W, 150], fill=(135, 190, 235))
    d.rectangle([0, 150, W, H], fill=(30, 80, 150))
    d.polygon([(60, 240), (120, 170), (260, 175), (320, 240)], fill=(110, 100, 90))
    for i, y in enumerate(range(60, 180, 20)):
        d.rectangle([150, y, 180, y + 20], fill=(200, 30, 30) if i % 2 == 0 else (245, 245, 245))
    d.rectangle([145, 45, 185, 60], fill=(40, 40, 40))
    d.polygon([(145, 45), (165, 25), (185, 45)], fill=(200, 30, 30))


def clock_tower(d):
    d.rectangle([0, 0, W, H], fill=(220, 200, 170))
    d.rectangle([125, 40, 195, 240], fill=(120, 70, 40))
    d.polygon([(120, 40), (160, 0), (200, 40)], fill=(60, 90, 70))
    d.ellipse([135, 60, 185, 110], fill=(250, 250, 240), outline=(0, 0, 0), width=3)
    d.line([(160, 85), (160, 65)], fill=(0, 0, 0), width=3)
    d.line([(160, 85), (175, 92)], fill=(0, 0, 0), width=3)
    for y in range(130, 230, 30):
        d.rectangle([150, y, 170, y + 18], fill=(40, 30, 20))


def street_sign(d):
    d.rectangle([0, 0, W, H], fill=(190, 215, 230))
    d.rectangle([150, 100, 165, 240], fill=(90, 90, 90))
    d.rounded_rectangle([30, 50, 290, 110], radius=8, fill=(20, 110, 60), outline=(250, 250, 250), width=4)
    d.text((50, 58), "MAPLE AVE", fill=(255, 255, 255), font=font(40))


def receipt(d):
    d.rectangle([0, 0, W, H], fill=(90, 70, 60))
    d.rectangle([40, 10, 280, 235], fill=(250, 248, 240))
    lines = ["HARBOR CAFE", "Espresso   3.20", "Scone      2.80", "TOTAL      6.00"]
    for i, line in enumerate(lines):
        d.text((55, 20 + i * 50), line, fill=(20, 20, 20), font=font(24))


def chart(d):
    d.rectangle([0, 0, W, H], fill=(255, 255, 255))
    d.line([(40, 200), (300, 200)], fill=(0, 0, 0), width=2)
    d.line([(40, 200), (40, 20)], fill=(0, 0, 0), width=2)
    for i, (label, value) in enumerate([("Q1", 60), ("Q2", 95), ("Q3", 140), ("Q4", 120)]):
        x = 60 + i * 60
        d.rectangle([x, 200 - value, x + 35, 200], fill=(50, 100, 200))
        d.text((x + 5, 208), label, fill=(0, 0, 0), font=font(18))


def bridge(d):
    d.rectangle([0, 0, W, 120], fill=(170, 205, 240))
    d.rectangle([0, 120, W, H], fill=(60, 120, 110))
    d.arc([40, 60, 280, 260], start=180, end=360, fill=(170, 170, 180), width=14)
    d.rectangle([20, 150, 300, 162], fill=(150, 150, 160))


def mountain(d):
    d.rectangle([0, 0, W, H], fill=(250, 200, 150))
    d.polygon([(0, 240), (160, 40), (320, 240)], fill=(80, 70, 100))
    d.polygon([(130, 77), (160, 40), (190, 77), (170, 70), (160, 80), (150, 70)], fill=(255, 255, 255))
    d.ellipse([250, 20, 290, 60], fill=(255, 240, 120))


def mural(d):
    d.rectangle([0, 0, W, H], fill=(200, 120, 90))
    d.ellipse([110, 60, 230, 130], fill=(70, 110, 170))
    d.line([(200, 75), (235, 20)], fill=(70, 110, 170), width=10)
    d.polygon([(235, 20), (290, 30), (240, 32)], fill=(230, 180, 40))
    d.line([(150, 130), (145, 220)], fill=(40, 40, 40), width=5)
    d.line([(185, 130), (190, 220)], fill=(40, 40, 40), width=5)


SCENES = [
    ("kestrel_point_lighthouse", lighthouse, "Kestrel Point Lighthouse", "Kestrel_Point_Lighthouse"),
    ("orrin_clock_tower", clock_tower, "Orrin Clock Tower", "Orrin_Clock_Tower"),
    ("maple_avenue_sign", street_sign, "Maple Avenue, Veldmark", "Maple_Avenue_(Veldmark)"),
    ("harbor_cafe_receipt", receipt, "Harbor Cafe receipt", "Harbor_Cafe"),
    ("quarterly_sales_chart", chart, "Veldmark Ferries quarterly passengers chart", "Veldmark_Ferries"),
    ("silverfen_bridge", bridge, "Silverfen Bridge", "Silverfen_Bridge"),
    ("tallow_peak", mountain, "Tallow Peak at sunrise", "Tallow_Peak"),
    ("blue_heron_mural", mural, "Blue Heron Mural", "Blue_Heron_Mural"),
]


def main():
    rows = []
    for stem, draw, title, page in SCENES:
        image = Image.new("RGB", (W, H))
        draw(ImageDraw.Draw(image))
        image.save(HERE / "gallery" / f"{stem}.png", optimize=True)
        rows.append({"image": f"{stem}.png", "title": title, "url": BASE + page, "source": "en.example.org"})
    with open(HERE / "gallery" / "gallery.jsonl", "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
